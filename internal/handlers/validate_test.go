package handlers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"taskactions/api"
)

func TestJSONPointer(t *testing.T) {
	tests := []struct {
		path []string
		want string
	}{
		{nil, ""},
		{[]string{""}, "/"},
		{[]string{"status", "phase"}, "/status/phase"},
		{[]string{"a/b"}, "/a~1b"},
		{[]string{"m~n"}, "/m~0n"},
		// "~" is escaped first, so "~1" does not come back as "/".
		{[]string{"~1"}, "/~01"},
		{[]string{"env", "x/~y", "0"}, "/env/x~1~0y/0"},
	}
	for _, tt := range tests {
		if got := jsonPointer(tt.path); got != tt.want {
			t.Errorf("jsonPointer(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

const statusRoute = BasePath + "/projects/{project}/domains/{domain}/runs/{run}/actions/{action}/status"

// newValidatedServer serves one real route of the document behind the
// validator, the way HandlerWithOptions wires it (after chi has matched the
// route, so the route pattern is known). The handler echoes the body it got.
func newValidatedServer(t *testing.T) *httptest.Server {
	t.Helper()
	return newValidatedServerWith(t, func(*http.Server) {})
}

// newValidatedServerWith is newValidatedServer with its http.Server set
// up by configure before it serves.
func newValidatedServerWith(t *testing.T, configure func(*http.Server)) *httptest.Server {
	t.Helper()
	v, err := newValidator(api.OpenAPI, BasePath)
	if err != nil {
		t.Fatal(err)
	}
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
	})
	r := chi.NewRouter()
	r.Put(statusRoute, requireJSON(v.middleware(echo)).ServeHTTP)
	r.Put(BasePath+"/not-in-the-document", requireJSON(v.middleware(echo)).ServeHTTP)
	srv := httptest.NewUnstartedServer(r)
	configure(srv.Config)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// It reads better whole: its cases are one table, a line each.
func TestValidatorMiddleware(t *testing.T) {
	srv := newValidatedServer(t)
	const okPath = "/api/v1/projects/p1/domains/dev/runs/r1/actions/a0/status"
	valid := `{"attempt":1,"status":{"phase":"RUNNING","message":"hi"}}`
	tests := []struct {
		name        string
		path        string
		contentType string
		encoding    string // Content-Encoding
		body        string
		status      int
		pointer     string // an expected errors[].pointer
		parameter   string // an expected errors[].parameter
		detail      string // what that error's detail says
	}{
		{name: "valid", path: okPath, body: valid, status: http.StatusOK},
		{name: "valid with charset", path: okPath, contentType: "application/json; charset=utf-8", body: valid, status: http.StatusOK},
		{name: "attempt below minimum", path: okPath, body: `{"attempt":0,"status":{"phase":"RUNNING"}}`, status: http.StatusBadRequest, pointer: "/attempt"},
		{name: "attempt wrong type", path: okPath, body: `{"attempt":"1","status":{"phase":"RUNNING"}}`, status: http.StatusBadRequest, pointer: "/attempt"},
		// The phase is an allOf (a $ref with a description): the error is
		// the enum's, naming the values.
		{name: "unknown phase", path: okPath, body: `{"attempt":1,"status":{"phase":"RUNING"}}`, status: http.StatusBadRequest, pointer: "/status/phase",
			detail: `value is not one of the allowed values ["UNSPECIFIED","QUEUED","WAITING_FOR_RESOURCES","INITIALIZING","RUNNING",`},
		{name: "unknown cache status", path: okPath, body: `{"attempt":1,"status":{"phase":"RUNNING","cacheStatus":"hit"}}`, status: http.StatusBadRequest, pointer: "/status/cacheStatus",
			detail: `allowed values ["DISABLED","MISS","HIT",`},
		{name: "not JSON", path: okPath, body: `{"attempt":`, status: http.StatusBadRequest},
		{name: "missing body", path: okPath, contentType: "application/json", body: "", status: http.StatusBadRequest},
		// A body left out needs no Content-Type: the schema says it is required.
		{name: "no body, no type", path: okPath, body: "", status: http.StatusBadRequest, pointer: "", detail: "value is required"},
		{name: "bad run name", path: "/api/v1/projects/p1/domains/dev/runs/Bad_Run/actions/a0/status", body: valid, status: http.StatusBadRequest, parameter: "run"},
		{name: "bad action name", path: "/api/v1/projects/p1/domains/dev/runs/r1/actions/-a/status", body: valid, status: http.StatusBadRequest, parameter: "action"},
		{name: "text body", path: okPath, contentType: "text/plain", body: valid, status: http.StatusUnsupportedMediaType},
		{name: "latin-1 body", path: okPath, contentType: "application/json; charset=iso-8859-1", body: valid, status: http.StatusUnsupportedMediaType},
		{name: "YAML where only JSON is taken", path: okPath, contentType: "application/yaml", body: "attempt: 1", status: http.StatusUnsupportedMediaType},
		{name: "gzip", path: okPath, encoding: "gzip", body: valid, status: http.StatusUnsupportedMediaType},
		{name: "identity encoding", path: okPath, encoding: "identity", body: valid, status: http.StatusOK},
		{name: "trailing JSON", path: okPath, body: valid + `{}`, status: http.StatusBadRequest},
		{name: "trailing garbage", path: okPath, body: valid + ` x`, status: http.StatusBadRequest},
		{name: "trailing space", path: okPath, body: valid + " \n", status: http.StatusOK},
		{name: "too large", path: okPath, body: `{"attempt":1,"status":{"phase":"RUNNING","message":"` + strings.Repeat("x", MaxBodyBytes) + `"}}`, status: http.StatusRequestEntityTooLarge},
		// A route the document lacks is the server's mistake, not the client's.
		{name: "route not in document", path: "/api/v1/not-in-the-document", body: `{}`, status: http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPut, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			ct := tt.contentType
			if ct == "" && tt.body != "" {
				ct = "application/json"
			}
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			if tt.encoding != "" {
				req.Header.Set("Content-Encoding", tt.encoding)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d; body: %s", resp.StatusCode, tt.status, body)
			}
			if tt.status == http.StatusOK {
				// The validator read the body; the handler must still get all of it.
				if !bytes.Equal(body, []byte(tt.body)) {
					t.Errorf("handler got %q, want %q", body, tt.body)
				}
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var p Problem
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("problem %q: %v", body, err)
			}
			if (tt.pointer != "" || tt.detail != "") && tt.parameter == "" && !hasInvalid(p, func(e InvalidParam) bool {
				return e.Pointer != nil && *e.Pointer == tt.pointer && strings.Contains(e.Detail, tt.detail)
			}) {
				t.Errorf("no error with pointer %q saying %q in %s", tt.pointer, tt.detail, body)
			}
			if tt.parameter != "" && !hasInvalid(p, func(e InvalidParam) bool {
				return e.Parameter != nil && *e.Parameter == tt.parameter && strings.Contains(e.Detail, tt.detail)
			}) {
				t.Errorf("no error with parameter %q saying %q in %s", tt.parameter, tt.detail, body)
			}
			if hasInvalid(p, func(e InvalidParam) bool { return strings.Contains(e.Detail, `"allOf"`) }) {
				t.Errorf("an error says only that an allOf did not match: %s", body)
			}
		})
	}
}

func hasInvalid(p Problem, match func(InvalidParam) bool) bool {
	if p.Errors == nil {
		return false
	}
	for _, e := range *p.Errors {
		if match(e) {
			return true
		}
	}
	return false
}

// A body that is cut short, badly framed or stops arriving is the
// client's fault: 400 or 408, never a 500 (anyone reaching the port could
// fill the error log with them).
func TestBrokenBodies(t *testing.T) {
	srv := newValidatedServerWith(t, func(s *http.Server) { s.ReadTimeout = time.Second }) // as the server's own, shorter
	const head = "PUT /api/v1/projects/p1/domains/dev/runs/r1/actions/a0/status HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	tests := []struct {
		name    string
		request string
		close   bool // half-close after the request
		status  int
	}{
		{"cut short", head + "Content-Length: 1000\r\n\r\n{\"attempt\":1", true, http.StatusBadRequest},
		{"bad chunk", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", false, http.StatusBadRequest},
		{"stops arriving", head + "Content-Length: 1000\r\n\r\n{\"attempt\":1", false, http.StatusRequestTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tt.request); err != nil {
				t.Fatal(err)
			}
			if tt.close {
				_ = conn.(*net.TCPConn).CloseWrite()
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("status %d %s, want %d application/problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), tt.status)
			}
		})
	}
}

// A request without a body in the document (an event stream, over HTTP/2,
// where every request has a body reader) reaches the handler with the
// body net/http gave it: validation reads no body it has no schema for,
// and puts no copy in its place for an open stream to hold.
func TestValidatorLeavesAbsentBodiesAlone(t *testing.T) {
	v, err := newValidator(api.OpenAPI, BasePath)
	if err != nil {
		t.Fatal(err)
	}
	given := make(chan io.ReadCloser, 1)
	got := make(chan io.ReadCloser, 1)
	r := chi.NewRouter()
	r.Get(BasePath+"/projects/{project}/domains/{domain}/runs/{run}/actions/{action}/events",
		func(w http.ResponseWriter, r *http.Request) {
			given <- r.Body
			v.middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r.Body
			})).ServeHTTP(w, r)
		})
	srv := httptest.NewUnstartedServer(r)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL + BasePath + "/projects/p1/domains/dev/runs/r1/actions/a0/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s, want HTTP/2 200", resp.Proto, resp.Status)
	}
	if b, a := <-given, <-got; a != b {
		t.Errorf("the handler got body %T, not net/http's %T: the validator replaced it", a, b)
	}
}
