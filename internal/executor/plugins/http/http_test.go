package http

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"taskactions/internal/executor/plugins"
)

// loopback is the allowlist of the tests' local servers: nothing is
// allowed by default.
var loopback = []string{"localhost", "127.0.0.1", "::1"}

func newPlugin(t *testing.T, allow ...string) *Plugin {
	t.Helper()
	p, err := New(allow)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var uids atomic.Int64

func taskContext(custom map[string]any) *plugins.TaskContext {
	return &plugins.TaskContext{UID: fmt.Sprint("uid-", uids.Add(1)), Attempt: 1,
		Template: plugins.Template{Type: "http", Custom: custom}}
}

// round is one executor round: Handle, and the state kept for the next.
func round(t *testing.T, p *Plugin, tc *plugins.TaskContext) (plugins.Transition, *plugins.TaskContext) {
	t.Helper()
	tr, err := p.Handle(context.Background(), tc)
	if err != nil {
		t.Fatal(err)
	}
	if tr.State != nil {
		b, err := plugins.EncodeState(tr.State)
		if err != nil {
			t.Fatal(err)
		}
		tc = tc.WithState(tr.StateVersion, b)
	}
	return tr, tc
}

func handle(t *testing.T, p *Plugin, custom map[string]any) plugins.Transition {
	t.Helper()
	tr, _ := round(t, p, taskContext(custom))
	return tr
}

func wantPhase(t *testing.T, tr plugins.Transition, phase plugins.Phase, code string) {
	t.Helper()
	if tr.Phase != phase {
		t.Fatalf("phase %v (%+v), want %v", tr.Phase, tr.Error, phase)
	}
	got := ""
	if tr.Error != nil {
		got = tr.Error.Code
	}
	if got != code {
		t.Fatalf("error %+v, want code %q", tr.Error, code)
	}
}

// server is a loopback server counting its requests.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(t *testing.T, h nethttp.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func jsonHandler(status int, body string) nethttp.HandlerFunc {
	return func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("X-Build", "b-42")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func hostPort(s *httptest.Server) string { u, _ := url.Parse(s.URL); return u.Host }

// Without expressions, a 2xx succeeds and anything else fails for good,
// as in Kargo.
func TestStatusDecidesWithoutExpressions(t *testing.T) {
	p := newPlugin(t, loopback...)
	for _, tc := range []struct {
		status int
		phase  plugins.Phase
		code   string
	}{
		{200, plugins.PhaseSuccess, ""},
		{204, plugins.PhaseSuccess, ""},
		{404, plugins.PhasePermanentFailure, "FailureCriteriaMet"},
		{503, plugins.PhasePermanentFailure, "FailureCriteriaMet"},
	} {
		s := newServer(t, func(w nethttp.ResponseWriter, _ *nethttp.Request) { w.WriteHeader(tc.status) })
		tr := handle(t, p, map[string]any{"url": s.URL + "/hook"})
		wantPhase(t, tr, tc.phase, tc.code)
		if tc.phase == plugins.PhaseSuccess {
			if out, ok := tr.Outputs.(map[string]any); !ok || len(out) != 0 {
				t.Errorf("%d: outputs %#v, want an empty map", tc.status, tr.Outputs)
			}
		}
		if s.hits.Load() != 1 {
			t.Errorf("%d: %d requests", tc.status, s.hits.Load())
		}
	}
}

// Method, headers, query params (added to the URL's own) and body are sent.
func TestRequestIsSentAsConfigured(t *testing.T) {
	type seen struct {
		method, path, query, body, auth string
		multi                           []string
	}
	var got seen
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		got = seen{r.Method, r.URL.Path, r.URL.RawQuery, string(b), r.Header.Get("Authorization"), r.Header.Values("X-Multi")}
	})
	tr := handle(t, newPlugin(t, loopback...), map[string]any{
		"method": "POST",
		"url":    s.URL + "/api/deploy?fixed=1",
		"headers": []any{
			map[string]any{"name": "Authorization", "value": "Bearer s3cret"},
			map[string]any{"name": "X-Multi", "value": "a"},
			map[string]any{"name": "X-Multi", "value": "b"},
		},
		"queryParams": []any{map[string]any{"name": "env", "value": "prod & test"}, map[string]any{"name": "fixed", "value": "2"}},
		"body":        `{"freight":"abc"}`,
		"timeout":     "5s",
	})
	wantPhase(t, tr, plugins.PhaseSuccess, "")
	want := seen{"POST", "/api/deploy", "env=prod+%26+test&fixed=1&fixed=2", `{"freight":"abc"}`, "Bearer s3cret", []string{"a", "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("server saw %+v, want %+v", got, want)
	}
}

// The expressions see Kargo's environment: status, header(), headers and
// the parsed JSON body.
func TestExpressionsOverJSONBody(t *testing.T) {
	p := newPlugin(t, loopback...)
	for _, tc := range []struct {
		name, body, success, failure string
		phase                        plugins.Phase
		code                         string
	}{
		{"success holds", `{"state":"ok"}`, `response.body.state == "ok" && response.status == 200`, "", plugins.PhaseSuccess, ""},
		{"success does not hold", `{"state":"bad"}`, `response.body.state == "ok"`, "", plugins.PhasePermanentFailure, "FailureCriteriaMet"},
		{"failure holds", `{"state":"failed"}`, "", `response.body.state == "failed"`, plugins.PhasePermanentFailure, "FailureCriteriaMet"},
		{"failure does not hold", `{"state":"ok"}`, "", `response.body.state == "failed"`, plugins.PhaseSuccess, ""},
		{"both hold: failure wins", `{"state":"ok"}`, `true`, `response.header("X-Build") == "b-42"`, plugins.PhasePermanentFailure, "FailureCriteriaMet"},
		{"headers map", `[1,2,3]`, `response.headers["X-Build"][0] == "b-42" && len(response.body) == 3`, "", plugins.PhaseSuccess, ""},
		{"not a boolean", `{"state":"ok"}`, `response.body.state`, "", plugins.PhaseRetryableFailure, "ExpressionError"},
		{"evaluation error", `{"state":"ok"}`, `response.body.missing.deeper == 1`, "", plugins.PhaseRetryableFailure, "ExpressionError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, jsonHandler(200, tc.body))
			cfg := map[string]any{"url": s.URL}
			if tc.success != "" {
				cfg["successExpression"] = tc.success
			}
			if tc.failure != "" {
				cfg["failureExpression"] = tc.failure
			}
			wantPhase(t, handle(t, p, cfg), tc.phase, tc.code)
		})
	}
}

// A body that is not JSON is an empty map to the expressions, as in
// Kargo; one that says it is JSON but is not is an error.
func TestNonJSONBodies(t *testing.T) {
	p := newPlugin(t, loopback...)
	text := newServer(t, func(w nethttp.ResponseWriter, _ *nethttp.Request) { _, _ = io.WriteString(w, `{"state":"ok"}`) })
	tr := handle(t, p, map[string]any{"url": text.URL, "successExpression": `len(response.body) == 0`,
		"outputs": []any{map[string]any{"name": "body", "fromExpression": "response.body"}}})
	wantPhase(t, tr, plugins.PhaseSuccess, "")
	if b, _ := json.Marshal(tr.Outputs); string(b) != `{"body":{}}` {
		t.Errorf("outputs %s", b)
	}
	bad := newServer(t, jsonHandler(200, `{"state":`))
	wantPhase(t, handle(t, p, map[string]any{"url": bad.URL}), plugins.PhaseRetryableFailure, "ResponseError")
	scalar := newServer(t, jsonHandler(200, `"ok"`))
	wantPhase(t, handle(t, p, map[string]any{"url": scalar.URL}), plugins.PhaseRetryableFailure, "ResponseError")
}

func TestOutputsFromJSONBody(t *testing.T) {
	s := newServer(t, jsonHandler(201, `{"deployment":{"id":"d-7","replicas":3},"tags":["a","b"]}`))
	tr := handle(t, newPlugin(t, loopback...), map[string]any{"url": s.URL, "outputs": []any{
		map[string]any{"name": "id", "fromExpression": "response.body.deployment.id"},
		map[string]any{"name": "replicas", "fromExpression": "response.body.deployment.replicas"},
		map[string]any{"name": "tags", "fromExpression": "response.body.tags"},
		map[string]any{"name": "status", "fromExpression": "response.status"},
		map[string]any{"name": "build", "fromExpression": `response.header("X-Build")`},
	}})
	wantPhase(t, tr, plugins.PhaseSuccess, "")
	b, err := json.Marshal(tr.Outputs)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"build":"b-42","id":"d-7","replicas":3,"status":201,"tags":["a","b"]}`; string(b) != want {
		t.Errorf("outputs %s, want %s", b, want)
	}
	// An output that cannot be written to outputs.json is an error.
	tr = handle(t, newPlugin(t, loopback...), map[string]any{"url": s.URL, "outputs": []any{map[string]any{"name": "f", "fromExpression": "response.header"}}})
	wantPhase(t, tr, plugins.PhaseRetryableFailure, "OutputError")
}

// When neither expression holds, the step is running: the request is sent
// again after the poll interval (not before, however often the executor
// calls), until one holds.
func TestPollsUntilDecided(t *testing.T) {
	var state atomic.Value
	state.Store("pending")
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		jsonHandler(200, `{"state":"`+state.Load().(string)+`"}`)(w, r)
	})
	p := newPlugin(t, loopback...)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p.Now = func() time.Time { return now }
	tc := taskContext(map[string]any{"url": s.URL,
		"successExpression": `response.body.state == "done"`, "failureExpression": `response.body.state == "failed"`,
		"outputs": []any{map[string]any{"name": "state", "fromExpression": "response.body.state"}}})

	tr, tc := round(t, p, tc)
	wantPhase(t, tr, plugins.PhaseRunning, "")
	if tr.RequeueAfter != DefaultPollInterval || tr.State == nil || s.hits.Load() != 1 {
		t.Fatalf("first round: %+v, %d requests", tr, s.hits.Load())
	}
	now = now.Add(2 * time.Second) // woken early: no request
	tr, tc = round(t, p, tc)
	wantPhase(t, tr, plugins.PhaseRunning, "")
	if tr.RequeueAfter != 3*time.Second || s.hits.Load() != 1 {
		t.Fatalf("early round: requeue %v, %d requests", tr.RequeueAfter, s.hits.Load())
	}
	now = now.Add(3 * time.Second)
	tr, tc = round(t, p, tc)
	wantPhase(t, tr, plugins.PhaseRunning, "")
	if s.hits.Load() != 2 || tr.Version != 2 || !strings.Contains(tr.Info, "2 requests since 2025-01-01T00:00:00Z") {
		t.Fatalf("second poll: %+v, %d requests", tr, s.hits.Load())
	}
	state.Store("done")
	now = now.Add(5 * time.Second)
	tr, _ = round(t, p, tc)
	wantPhase(t, tr, plugins.PhaseSuccess, "")
	if out := tr.Outputs.(map[string]any); out["state"] != "done" || s.hits.Load() != 3 {
		t.Fatalf("outputs %v, %d requests", out, s.hits.Load())
	}
}

// A repeated round of an ended attempt reports the same end without a
// second request; the next attempt sends it again.
func TestRepeatedRoundDoesNotResend(t *testing.T) {
	s := newServer(t, func(nethttp.ResponseWriter, *nethttp.Request) {})
	p := newPlugin(t, loopback...)
	tc := taskContext(map[string]any{"method": "POST", "url": s.URL})
	first, _ := round(t, p, tc)
	again, _ := round(t, p, tc)
	wantPhase(t, again, plugins.PhaseSuccess, "")
	if s.hits.Load() != 1 || !reflect.DeepEqual(first, again) {
		t.Fatalf("%d requests; %+v then %+v", s.hits.Load(), first, again)
	}
	next := *tc
	next.Attempt = 2
	round(t, p, &next)
	if s.hits.Load() != 2 {
		t.Fatalf("attempt 2: %d requests", s.hits.Load())
	}
}

// Bodies over 2 MiB are refused, whether announced or not.
func TestBodyLimit(t *testing.T) {
	big := strings.Repeat("x", DefaultMaxBody+1)
	p := newPlugin(t, loopback...)
	for _, tc := range []struct {
		name     string
		body     string
		announce bool
		phase    plugins.Phase
	}{
		{"announced", big, true, plugins.PhaseRetryableFailure},
		{"chunked", big, false, plugins.PhaseRetryableFailure},
		{"at the limit", big[1:], false, plugins.PhaseSuccess},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, func(w nethttp.ResponseWriter, _ *nethttp.Request) {
				if tc.announce {
					w.Header().Set("Content-Length", fmt.Sprint(len(tc.body)))
				} else {
					w.(nethttp.Flusher).Flush() // no Content-Length
				}
				_, _ = io.WriteString(w, tc.body)
			})
			tr := handle(t, p, map[string]any{"url": s.URL})
			if tc.phase == plugins.PhaseSuccess {
				wantPhase(t, tr, tc.phase, "")
			} else {
				wantPhase(t, tr, tc.phase, "ResponseError")
			}
		})
	}
}

func TestInvalidConfig(t *testing.T) {
	p := newPlugin(t, loopback...)
	for _, cfg := range []map[string]any{
		{},
		{"url": ""},
		{"URL": "http://127.0.0.1/"},
		{"url": "http://127.0.0.1/", "retries": 3},
		{"url": "http://127.0.0.1/", "method": "get"},
		{"url": "http://127.0.0.1/", "method": "OPTIONS"},
		{"url": "ftp://127.0.0.1/"},
		{"url": "/relative"},
		{"url": "http://127.0.0.1/", "timeout": "10"},
		{"url": "http://127.0.0.1/", "timeout": "0s"},
		{"url": "http://127.0.0.1/", "body": 3},
		{"url": "http://127.0.0.1/", "headers": []any{map[string]any{"name": "X"}}},
		{"url": "http://127.0.0.1/", "headers": []any{map[string]any{"name": "X", "value": "v", "extra": 1}}},
		{"url": "http://127.0.0.1/", "queryParams": []any{"a=b"}},
		{"url": "http://127.0.0.1/", "successExpression": "response.status =="},
		{"url": "http://127.0.0.1/", "outputs": []any{map[string]any{"name": "x"}}},
		{"url": "http://127.0.0.1/", "outputs": []any{map[string]any{"name": "x", "fromExpression": "1 +"}}},
	} {
		tr := handle(t, p, cfg)
		if tr.Phase != plugins.PhasePermanentFailure || tr.Error == nil || tr.Error.Code != "InvalidSpec" {
			t.Errorf("%v: %v %+v, want InvalidSpec", cfg, tr.Phase, tr.Error)
		}
	}
}

// A request that cannot be sent is Kargo's "errored": retryable. Header
// values and the query never show in the message.
func TestRequestFailures(t *testing.T) {
	p := newPlugin(t, loopback...)
	closed := httptest.NewServer(nethttp.NotFoundHandler())
	closed.Close()
	secret := map[string]any{"url": closed.URL + "/?apikey=QUERYSECRET",
		"headers":     []any{map[string]any{"name": "Authorization", "value": "HEADERSECRET"}},
		"queryParams": []any{map[string]any{"name": "k", "value": "PARAMSECRET"}}}
	tr := handle(t, p, secret)
	wantPhase(t, tr, plugins.PhaseRetryableFailure, "RequestFailed")
	for _, s := range []string{"QUERYSECRET", "HEADERSECRET", "PARAMSECRET"} {
		if strings.Contains(tr.Error.Message+tr.Info, s) {
			t.Errorf("message shows %s: %s", s, tr.Error.Message)
		}
	}
	slow := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	tr = handle(t, p, map[string]any{"url": slow.URL, "timeout": "100ms"})
	wantPhase(t, tr, plugins.PhaseRetryableFailure, "RequestFailed")
}

// Abort cancels the request under way; the round is not the step's end.
func TestAbortCancelsTheRequest(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		once.Do(func() { close(started) })
		<-r.Context().Done()
	})
	p := newPlugin(t, loopback...)
	tc := taskContext(map[string]any{"url": s.URL, "timeout": "30s"})
	go func() {
		<-started
		_ = p.Abort(context.Background(), tc)
	}()
	start := time.Now()
	tr, _ := round(t, p, tc)
	wantPhase(t, tr, plugins.PhaseRunning, "")
	if time.Since(start) > 10*time.Second || !strings.Contains(tr.Info, "interrupted") {
		t.Fatalf("%+v after %v", tr, time.Since(start))
	}
}

func TestParseAllowlist(t *testing.T) {
	for _, bad := range []string{"", "http://x", "a b", "10.0.0.0/33", "host:0", "host:http", "*x.example.com"} {
		if _, err := ParseAllowlist([]string{bad}); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	al, err := ParseAllowlist([]string{"api.example.com", "*.svc.example.com:8443", "[::1]:8080", "10.0.0.0/8:443", "::ffff:192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host, port string
		ok         bool
	}{
		{"api.example.com", "443", true},
		{"API.Example.Com.", "80", true},
		{"x.api.example.com", "443", false},
		{"a.svc.example.com", "8443", true},
		{"a.b.svc.example.com", "8443", true},
		{"svc.example.com", "8443", false},
		{"a.svc.example.com", "443", false},
		{"::1", "8080", true},
		{"[::1]", "8080", true},
		{"::1", "80", false},
		{"10.2.3.4", "443", true},
		{"10.2.3.4", "80", false},
		{"192.0.2.1", "80", true},
		{"127.0.0.1", "80", false},
		{"localhost", "80", false},
	} {
		_, err := al.admit(tc.host, tc.port)
		if (err == nil) != tc.ok {
			t.Errorf("%s:%s: %v, want allowed %v", tc.host, tc.port, err, tc.ok)
		}
	}
}
