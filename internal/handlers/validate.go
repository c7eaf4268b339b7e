package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/go-chi/chi/v5"
)

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 1 << 20

// validator checks requests against the OpenAPI document, so the document,
// not hand-written checks, decides what is valid. It runs after chi has
// matched the route: chi's route pattern is the document's path.
type validator struct {
	doc  *openapi3.T
	base string
	// checked holds, for each operation of the document, the copy that
	// requests are validated against: the same but for its security. The
	// authenticate middleware enforces the document's security; kin-openapi's
	// own check of it would only read each request body into a new buffer
	// and put that back in its place, which an open stream then holds.
	checked map[*openapi3.Operation]*openapi3.Operation
}

func newValidator(spec []byte, base string) (*validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec)
	if err != nil {
		return nil, fmt.Errorf("load OpenAPI document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("OpenAPI document: %w", err)
	}
	checked := map[*openapi3.Operation]*openapi3.Operation{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			c := *op
			c.Security = &openapi3.SecurityRequirements{}
			checked[op] = &c
		}
	}
	return &validator{doc: doc, base: base, checked: checked}, nil
}

// operation returns the document's operation for the route chi matched.
func (v *validator) operation(r *http.Request) (path string, item *openapi3.PathItem, op *openapi3.Operation) {
	rc := chi.RouteContext(r.Context())
	path = strings.TrimPrefix(rc.RoutePattern(), v.base)
	if item = v.doc.Paths.Value(path); item != nil {
		op = item.GetOperation(documentMethod(r))
	}
	return path, item, op
}

// documentMethod is the method whose operation serves r: HEAD is answered
// like GET, without the body.
func documentMethod(r *http.Request) string {
	if r.Method == http.MethodHead {
		return http.MethodGet
	}
	return r.Method
}

func (v *validator) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := v.check(w, r); err != nil {
			writeProblem(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// check validates r against the document (a function of its own for the
// frame's sake; see withID).
//
//go:noinline
func (v *validator) check(w http.ResponseWriter, r *http.Request) error {
	path, item, op := v.operation(r)
	if op == nil {
		return fmt.Errorf("route %s %s is not in the OpenAPI document", r.Method, path)
	}
	if op.RequestBody != nil {
		if err := readBody(w, r, op); err != nil {
			return err
		}
		if err := yamlAsJSON(r); err != nil {
			return err
		}
	}
	rc := chi.RouteContext(r.Context())
	params := make(map[string]string, len(rc.URLParams.Keys))
	for i, k := range rc.URLParams.Keys {
		params[k] = rc.URLParams.Values[i]
	}
	err := openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
		Request:    r,
		PathParams: params,
		Route:      &routers.Route{Spec: v.doc, Path: path, PathItem: item, Method: documentMethod(r), Operation: v.checked[op]},
		Options:    &openapi3filter.Options{MultiError: true},
	})
	if err != nil {
		return describeInvalid(err)
	}
	return nil
}

// acceptsBody refuses (415) a body in a media type the operation does not
// take (YAML where only JSON is), and a Content-Encoding: bodies are read
// as they come, so a gzipped one would be read as garbage or, worse, as
// the plain text it only claims not to be.
func acceptsBody(op *openapi3.Operation, h http.Header) error {
	if ce := h.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return fmt.Errorf("%w: Content-Encoding %q (bodies are not decoded: send them as they are)", errUnsupportedMediaType, ce)
	}
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	if err != nil || op.RequestBody.Value == nil || op.RequestBody.Value.Content.Get(mt) == nil {
		return fmt.Errorf("%w: this operation does not take %q", errUnsupportedMediaType, h.Get("Content-Type"))
	}
	return nil
}

// bodyReadError says whose fault a body that could not be read is: the
// client's, as a body larger than the limit (413), one that stopped
// arriving (408, after the server's read timeout), or one cut short or
// badly framed (400). None is the server's fault, so none is a 500.
func bodyReadError(err error) error {
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooLarge):
		return err
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%w: %v", errBodyTimeout, err)
	}
	return badRequest{fmt.Errorf("the request body could not be read: %w", err)}
}

// readBody reads the whole body (at most MaxBodyBytes) and puts it back
// for the validator and the handler. A body that is there must be in a
// media type the operation takes; none needs no Content-Type (the schema
// says whether it may be left out). It refuses a body that holds more than
// one JSON value: `{...}{}` is not a request, whatever a streaming decoder
// would make of it.
func readBody(w http.ResponseWriter, r *http.Request, op *openapi3.Operation) error {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return bodyReadError(err)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	if len(b) == 0 {
		return nil
	}
	if err := acceptsBody(op, r.Header); err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil // the schema says whether a body is required
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return nil // not JSON: the validator says where
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest{errors.New("the request body has data after its JSON value")}
	}
	return nil
}

// describeInvalid turns kin-openapi's errors into one problem listing each
// invalid field: a JSON pointer into the body, or a parameter name.
func describeInvalid(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return err
	}
	inv := &invalidRequest{detail: "the request does not match the API schema"}
	inv.collect(err, "")
	return inv
}

// collect walks kin-openapi's error tree. It matches concrete types, not
// errors.As: a MultiError answers As with its first element, which would
// hide the others (and the parameter a RequestError names).
func (inv *invalidRequest) collect(err error, param string) {
	switch e := err.(type) {
	case openapi3.MultiError:
		for _, x := range e {
			inv.collect(x, param)
		}
	case *openapi3filter.RequestError:
		if e.Parameter != nil {
			param = e.Parameter.Name
		}
		if e.Err == nil {
			inv.add(param, "", e.Reason)
			return
		}
		inv.collect(e.Err, param)
	case *openapi3.SchemaError:
		// A field whose schema is allOf (a $ref with a description beside
		// it) fails as "doesn't match all schemas": what it wants is in the
		// schemas it did not match (an enum names its values there).
		var inner openapi3.MultiError
		if e.SchemaField == "allOf" && errors.As(e.Origin, &inner) && len(inner) > 0 {
			for _, x := range inner {
				inv.collect(x, param)
			}
			return
		}
		inv.add(param, jsonPointer(e.JSONPointer()), e.Reason)
	case *openapi3filter.ParseError:
		// JSON, or YAML where the operation takes it (Kargo's objects).
		inv.detail = "the request body does not parse as its Content-Type says"
		inv.add(param, "", e.Error())
	default:
		inv.add(param, "", err.Error())
	}
}

func (inv *invalidRequest) add(param, pointer, detail string) {
	p := InvalidParam{Detail: detail}
	if param != "" {
		p.Parameter = &param
	} else {
		p.Pointer = &pointer
	}
	inv.params = append(inv.params, p)
}

// jsonPointer renders path as an RFC 6901 pointer.
func jsonPointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}
