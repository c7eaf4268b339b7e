// Package api holds the HTTP contract: the OpenAPI document the server is
// generated from, validates against and serves.
package api

import _ "embed"

// OpenAPI is api/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
