package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"

	"taskactions/api"
)

// The API document, served as written (YAML) and parsed (JSON): most tools
// and SDKs read JSON, and the Go client parses it into OpenAPIDocument.

// parseDocument is the document as the JSON operation serves it.
func parseDocument(spec []byte) (OpenAPIDocument, error) {
	var doc OpenAPIDocument
	j, err := yaml.YAMLToJSON(spec)
	if err == nil {
		err = json.Unmarshal(j, &doc)
	}
	if err != nil {
		return doc, fmt.Errorf("the OpenAPI document as JSON: %w", err)
	}
	return doc, nil
}

// GetOpenAPI serves the document the server validates against, in YAML.
func (s *Server) GetOpenAPI(context.Context, GetOpenAPIRequestObject) (GetOpenAPIResponseObject, error) {
	return GetOpenAPI200ApplicationyamlResponse{Body: bytes.NewReader(api.OpenAPI), ContentLength: int64(len(api.OpenAPI))}, nil
}

// GetOpenAPIJSON serves the same document in JSON.
func (s *Server) GetOpenAPIJSON(context.Context, GetOpenAPIJSONRequestObject) (GetOpenAPIJSONResponseObject, error) {
	return GetOpenAPIJSON200JSONResponse(s.document), nil
}
