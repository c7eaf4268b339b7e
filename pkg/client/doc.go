// Package client is the Go client of the API, generated from
// api/openapi.yaml by oapi-codegen (client.gen.go), with the event streams
// the generator leaves out written by hand (streams.go): one method per
// stream operation, each returning a reader whose Next decodes one typed
// event at a time. Give it the token with WithBearerToken.
//
// The first comment of the package, in the generated file, is the
// generator's.
package client
