package handlers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"taskactions/internal/pipeline"
)

// Kargo's kinds are served as the Kubernetes objects they are: bodies in
// JSON or YAML, answers written from each object's memoized encoding.

// objectBody is the object of a request: decoded by the generated code
// from JSON, or here from YAML as kubectl reads a manifest: one document,
// converted to JSON as YAML 1.1 reads it (so `name: on` is a boolean,
// refused, not "true").
func objectBody[T any](kind string, jsonBody *T, body io.Reader) (*T, error) {
	if jsonBody != nil {
		return jsonBody, nil
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, badRequest{fmt.Errorf("read the body: %w", err)}
	}
	docs := 0
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, badRequest{fmt.Errorf("the body is not YAML: %w", err)}
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs++
		}
	}
	if docs > 1 {
		return nil, badRequest{fmt.Errorf("the body holds %d YAML documents: send one %s per request", docs, kind)}
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, badRequest{fmt.Errorf("the body is not YAML: %w", err)}
	}
	var obj T
	if err := json.Unmarshal(j, &obj); err != nil {
		return nil, badRequest{fmt.Errorf("the body is not a %s: %w", kind, err)}
	}
	return &obj, nil
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
