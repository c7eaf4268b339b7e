package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"taskactions/api"
	"taskactions/pkg/client"
)

// The contract as SDK users see it: contract_walk_test.go calls every
// operation of api/openapi.yaml through the generated Go client, with the
// token and nothing else. Under the client is a contractRecorder, which
// sends each request as it is, finds its operation in the document,
// checks the answer against the document (status, headers, body; each
// event of a stream against the schema its name has in x-sse-events) and
// records it, so that the test can tell when the document has an
// operation that no call reached.

// contractRecorder is the HTTP client of the contract test's client.
type contractRecorder struct {
	doc    *openapi3.T
	router routers.Router
	http   *http.Client

	mu       sync.Mutex
	statuses map[string][]int // by operationId
	problems []string         // what did not match the document
	streams  sync.WaitGroup
}

// newContractRecorder reads the document, its server the one at base.
func newContractRecorder(t testing.TB, base string) *contractRecorder {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	doc.Servers = openapi3.Servers{{URL: base + "/api/v1"}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &contractRecorder{doc: doc, router: router, http: &http.Client{}, statuses: map[string][]int{}}
}

func (c *contractRecorder) problem(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// Do implements client.HttpRequestDoer.
func (c *contractRecorder) Do(req *http.Request) (*http.Response, error) {
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		c.problem("%s %s is no operation of the document: %v", req.Method, req.URL.Path, err)
		return c.http.Do(req)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	op := route.Operation.OperationID
	c.mu.Lock()
	c.statuses[op] = append(c.statuses[op], resp.StatusCode)
	c.mu.Unlock()
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route}
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		c.checkStream(op, route, resp)
		return resp, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	if binary(route.Operation, resp) {
		opts.ExcludeResponseBody = true
	}
	if err := openapi3filter.ValidateResponse(req.Context(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body)), Options: opts,
	}); err != nil {
		c.problem("%s answered %d against the document: %v\n%.2000s", op, resp.StatusCode, err, body)
	}
	return resp, nil
}

// binary: the response's schema is a binary string (the YAML document),
// bytes that no decoder of kin-openapi's should read.
func binary(op *openapi3.Operation, resp *http.Response) bool {
	r := op.Responses.Status(resp.StatusCode)
	if r == nil || r.Value == nil {
		return false
	}
	mt := r.Value.Content.Get(strings.TrimSpace(strings.Split(resp.Header.Get("Content-Type"), ";")[0]))
	return mt != nil && mt.Schema != nil && mt.Schema.Value != nil && mt.Schema.Value.Format == "binary"
}

// checkStream checks the events of a stream as the client reads them:
// each name is one its schema's x-sse-events names, and its data is valid
// against that schema and against the stream's oneOf.
func (c *contractRecorder) checkStream(op string, route *routers.Route, resp *http.Response) {
	union := route.Operation.Responses.Status(http.StatusOK).Value.Content.Get("text/event-stream").Schema
	names := map[string]*openapi3.Schema{}
	if m, ok := union.Value.Extensions["x-sse-events"].(map[string]any); ok {
		for name, schema := range m {
			if ref, ok := c.doc.Components.Schemas[fmt.Sprint(schema)]; ok {
				names[name] = ref.Value
			}
		}
	}
	if len(names) == 0 {
		c.problem("%s: its stream schema %s has no x-sse-events", op, union.Ref)
	}
	pr, pw := io.Pipe()
	resp.Body = teeBody{io.TeeReader(resp.Body, pw), resp.Body, pw}
	c.streams.Go(func() {
		defer pr.Close()
		events := client.NewEventReader(pr)
		for {
			ev, err := events.Next()
			if err != nil {
				return
			}
			if ev.Comment != "" || ev.Data == nil {
				continue
			}
			schema, ok := names[ev.Type]
			if !ok {
				c.problem("%s: an event named %q, which x-sse-events does not name", op, ev.Type)
				continue
			}
			var v any
			if err := json.Unmarshal(ev.Data, &v); err != nil {
				c.problem("%s: %q event %s: data not JSON: %v", op, ev.Type, ev.ID, err)
				continue
			}
			if err := schema.VisitJSON(v); err != nil {
				c.problem("%s: %q event %s against its schema: %v\n%.1000s", op, ev.Type, ev.ID, err, ev.Data)
			}
			if err := union.Value.VisitJSON(v); err != nil {
				c.problem("%s: %q event %s against %s: %v", op, ev.Type, ev.ID, union.Ref, err)
			}
		}
	})
}

// teeBody is a stream's body that its checker reads too.
type teeBody struct {
	io.Reader
	body io.Closer
	pipe *io.PipeWriter
}

func (b teeBody) Close() error {
	_ = b.pipe.Close()
	return b.body.Close()
}

// check fails t for each operation of the document that was not answered
// with one of its documented success statuses, and for each answer that
// did not match the document.
func (c *contractRecorder) check(t *testing.T) {
	c.streams.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	var ops []string
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			var success []int
			for code := range op.Responses.Map() {
				if n, err := strconv.Atoi(code); err == nil && n < 300 {
					success = append(success, n)
				}
			}
			got := c.statuses[op.OperationID]
			if !slices.ContainsFunc(got, func(s int) bool { return slices.Contains(success, s) }) {
				t.Errorf("%s (%s %s): answered %v, never one of its documented %v: the test does not call it, or it fails", op.OperationID, method, path, got, success)
			}
			ops = append(ops, op.OperationID)
		}
	}
	sort.Strings(ops)
	t.Logf("%d operations: %s", len(ops), strings.Join(ops, " "))
	for _, p := range c.problems {
		t.Error(p)
	}
}

// contractClient is the generated client as the README sets it up, over
// the recorder.
func contractClient(t testing.TB, s *server, rec *contractRecorder) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(s.URL()+"/api/v1", client.WithBearerToken(s.token), client.WithHTTPClient(rec))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// answer is what every generated response has.
type answer interface{ StatusCode() int }

// want fails t unless the call answered status.
func want(t testing.TB, r answer, err error, status int) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode() != status {
		body := ""
		if b, ok := r.(interface{ GetBody() []byte }); ok {
			body = string(b.GetBody())
		}
		t.Fatalf("HTTP %d, want %d: %.1000s", r.StatusCode(), status, body)
	}
}

// decoded fails t when the typed body of the answer is missing.
func decoded[T any](t testing.TB, v *T) *T {
	t.Helper()
	if v == nil {
		t.Fatal("the typed body is missing")
	}
	return v
}

// untilSynced reads a stream's events up to its synced event, returning
// the items of the snapshot.
func untilSynced[T any](t testing.TB, ctx context.Context, s *client.Stream[client.StreamEvent[T]]) []T {
	t.Helper()
	defer s.Close()
	var items []T
	for {
		e, err := s.Next()
		if err != nil {
			t.Fatalf("before synced: %v", err)
		}
		switch {
		case e.Item != nil:
			items = append(items, *e.Item)
		case e.Synced != nil:
			return items
		case e.Reset != nil:
			items = nil
		}
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
	}
}
