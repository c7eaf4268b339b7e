package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"taskactions/internal/pipeline"
)

// Kargo's kinds are served as the Kubernetes objects they are: bodies in
// JSON or YAML, answers written from each object's memoized encoding.

// objectBody is the object of a request, decoded by the generated code
// from JSON: a YAML body was read as the JSON it stands for before the
// request was validated (see yamlAsJSON).
func objectBody[T any](kind string, jsonBody *T) (*T, error) {
	if jsonBody == nil {
		return nil, badRequest{fmt.Errorf("the body is not a %s", kind)}
	}
	return jsonBody, nil
}

// objectJSON is the object of a view, encoded once.
func objectJSON[T pipeline.Object](v *pipeline.ObjectView[T]) []byte {
	return v.JSON.Bytes(func() []byte {
		b, _ := json.Marshal(v.Object)
		return b
	})
}

// objectEvent is the data of a stream event about an object: its JSON
// with the field `deleted`, encoded once however many streams carry it.
func objectEvent[T pipeline.Object](v *pipeline.ObjectView[T]) []byte {
	return v.Wire.Bytes(func() []byte { return withDeleted(objectJSON(v), v.Deleted) })
}

// objectResponse writes one object from its encoding.
type objectResponse struct {
	body   []byte
	status int
}

func (r objectResponse) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(r.body)+1))
	w.WriteHeader(r.status)
	_, err := w.Write(append(slices.Clip(r.body), '\n'))
	return err
}
