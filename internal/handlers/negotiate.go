package handlers

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/munnerz/goautoneg"
	"sigs.k8s.io/yaml"
)

// The operations whose success the document gives in YAML too (Kargo's
// objects, which kubectl users read as YAML) answer in YAML when the
// request's Accept prefers it; the handlers write JSON, converted here.

// yamlMedia is the media type the document names YAML by.
const yamlMedia = "application/yaml"

// negotiate converts the operation's JSON success to YAML when the
// document offers YAML for it and Accept prefers YAML to JSON (Accept's
// q-values, as Kubernetes reads them).
func (v *validator) negotiate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !v.offersYAML(r) || goautoneg.Negotiate(r.Header.Get("Accept"), []string{"application/json", yamlMedia}) != yamlMedia {
			next.ServeHTTP(w, r)
			return
		}
		y := &yamlWriter{ResponseWriter: w, header: http.Header{}}
		next.ServeHTTP(y, r)
		y.finish()
	})
}

// offersYAML reports whether the document gives the operation's 200 in
// YAML.
func (v *validator) offersYAML(r *http.Request) bool {
	_, _, op := v.operation(r)
	if op == nil || op.Responses == nil {
		return false
	}
	ok := op.Responses.Status(http.StatusOK)
	return ok != nil && ok.Value != nil && ok.Value.Content.Get(yamlMedia) != nil
}

// yamlWriter holds a response until it is complete: a JSON 200 is sent
// as YAML, anything else (a problem) as it was written.
type yamlWriter struct {
	http.ResponseWriter
	header http.Header
	status int
	body   bytes.Buffer
}

func (y *yamlWriter) Header() http.Header { return y.header }

func (y *yamlWriter) WriteHeader(code int) {
	if y.status == 0 {
		y.status = code
	}
}

func (y *yamlWriter) Write(b []byte) (int, error) {
	y.WriteHeader(http.StatusOK)
	return y.body.Write(b)
}

func (y *yamlWriter) finish() {
	body := y.body.Bytes()
	if y.status == http.StatusOK && y.header.Get("Content-Type") == "application/json" {
		if out, err := yaml.JSONToYAML(body); err == nil {
			body = out
			y.header.Set("Content-Type", yamlMedia)
		}
	}
	h := y.ResponseWriter.Header()
	for k, vs := range y.header {
		h[k] = vs
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Add("Vary", "Accept")
	if y.status == 0 {
		y.status = http.StatusOK
	}
	y.ResponseWriter.WriteHeader(y.status)
	_, _ = y.ResponseWriter.Write(body) // the client's to read; a failed write has no one to tell
}
