package providers

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// fakeEval stands for rules.Evaluate: it records the values it is given
// and answers phase and err.
type fakeEval struct {
	mu    sync.Mutex
	got   []any
	phase rolloutsapi.AnalysisPhase
	err   error
}

func (f *fakeEval) eval(_ rolloutsapi.Metric, v any) (rolloutsapi.AnalysisPhase, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, v)
	if f.err != nil {
		return rolloutsapi.AnalysisPhaseError, f.err
	}
	return f.phase, nil
}

func succeeding() *fakeEval { return &fakeEval{phase: rolloutsapi.AnalysisPhaseSuccessful} }

func webMetric(w rolloutsapi.WebMetric) rolloutsapi.Metric {
	return rolloutsapi.Metric{Name: "m", Provider: rolloutsapi.MetricProvider{Web: &w}}
}

// request is what a test server received.
type request struct {
	Method, Path string
	Header       http.Header
	Body         string
}

// recorder is a test server answering with handler, recording requests.
type recorder struct {
	mu   sync.Mutex
	reqs []request
}

func (r *recorder) server(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, request{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: string(b)})
		r.mu.Unlock()
		handler(w, req)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (r *recorder) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// checkError checks that a measurement is a finished Error whose message
// contains want, with no value.
func checkError(t *testing.T, m rolloutsapi.Measurement, want string) {
	t.Helper()
	if m.Phase != rolloutsapi.AnalysisPhaseError || !strings.Contains(m.Message, want) {
		t.Fatalf("measurement = %s %q, want Error containing %q", m.Phase, m.Message, want)
	}
	if m.Value != "" || m.StartedAt == nil || m.FinishedAt == nil {
		t.Fatalf("error measurement: value %q, startedAt %v, finishedAt %v", m.Value, m.StartedAt, m.FinishedAt)
	}
}

func TestWebJSONPathIntoNestedJSON(t *testing.T) {
	var rec recorder
	srv := rec.server(t, reply(200, `{"data":{"status":"up","items":[{"ratio":0.97,"tags":["a","b"]},{"ratio":0.5}]}}`))
	for _, tc := range []struct {
		path      string
		wantValue string
		wantGot   any
	}{
		{"{$.data.items[0].ratio}", "0.97", 0.97},
		{"{.data.items[1].ratio}", "0.5", 0.5},
		{"{$.data.status}", `"up"`, "up"},
		{"{$.data.items[0].tags}", `["a","b"]`, []any{"a", "b"}},
		{"{$.data.items[0]}", `{"ratio":0.97,"tags":["a","b"]}`, map[string]any{"ratio": 0.97, "tags": []any{"a", "b"}}},
		{"{$.data.items[*].ratio}", "0.97", 0.97}, // the first result, as Rollouts takes it
	} {
		t.Run(tc.path, func(t *testing.T) {
			ev := &fakeEval{phase: rolloutsapi.AnalysisPhaseFailed}
			m := Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL + "/metrics", JSONPath: tc.path}), ev.eval)
			if m.Phase != rolloutsapi.AnalysisPhaseFailed || m.Value != tc.wantValue || m.Message != "" {
				t.Fatalf("measurement = %s %q %q, want Failed (the evaluator's) %q", m.Phase, m.Value, m.Message, tc.wantValue)
			}
			if m.StartedAt == nil || m.FinishedAt == nil {
				t.Fatalf("not finished: %+v", m)
			}
			if len(ev.got) != 1 || !reflect.DeepEqual(ev.got[0], tc.wantGot) {
				t.Fatalf("evaluator got %#v, want %#v", ev.got, tc.wantGot)
			}
		})
	}
	if reqs := rec.requests(); len(reqs) == 0 || reqs[0].Method != "GET" || reqs[0].Path != "/metrics" {
		t.Fatalf("requests = %+v, want GET /metrics", reqs)
	}
}

func TestWebDefaultJSONPathIsWholeBody(t *testing.T) {
	var rec recorder
	srv := rec.server(t, reply(200, `{"ok":true}`))
	ev := succeeding()
	m := Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL}), ev.eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful || m.Value != `{"ok":true}` {
		t.Fatalf("measurement = %s %q", m.Phase, m.Value)
	}
	if !reflect.DeepEqual(ev.got, []any{map[string]any{"ok": true}}) {
		t.Fatalf("evaluator got %#v", ev.got)
	}
}

func TestWebJSONPathErrors(t *testing.T) {
	var rec recorder
	srv := rec.server(t, reply(200, `{"a":{"b":1}}`))
	ev := succeeding()
	m := Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL, JSONPath: "{$.a.missing}"}), ev.eval)
	checkError(t, m, "Could not find JSONPath in body: missing is not found")

	before := len(rec.requests())
	m = Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL, JSONPath: "{$.a"}), ev.eval)
	checkError(t, m, "unclosed action")
	if len(rec.requests()) != before {
		t.Fatal("a jsonPath that does not parse must fail before the request")
	}
	if len(ev.got) != 0 {
		t.Fatalf("evaluator called with %v", ev.got)
	}
}

func TestWebNon2xx(t *testing.T) {
	var rec recorder
	for _, status := range []int{301, 404, 503} {
		srv := rec.server(t, reply(status, `{"v":1}`))
		ev := succeeding()
		m := Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL}), ev.eval)
		checkError(t, m, "received non 2xx response code: "+strconv.Itoa(status))
		if m.Message != "received non 2xx response code: "+strconv.Itoa(status) {
			t.Fatalf("message = %q", m.Message)
		}
		if len(ev.got) != 0 {
			t.Fatalf("evaluator called on a %d", status)
		}
	}
}

func TestWebNonJSONBodyIsSuccessfulUnevaluated(t *testing.T) {
	var rec recorder
	srv := rec.server(t, reply(200, "OK, all good"))
	ev := &fakeEval{phase: rolloutsapi.AnalysisPhaseFailed}
	m := Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL, JSONPath: "{$.x}"}), ev.eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful || m.Value != "OK, all good" || m.FinishedAt == nil {
		t.Fatalf("measurement = %+v", m)
	}
	if len(ev.got) != 0 {
		t.Fatalf("evaluator called with %v", ev.got)
	}
}

func TestWebEvaluatorError(t *testing.T) {
	var rec recorder
	srv := rec.server(t, reply(200, `{"v":3}`))
	ev := &fakeEval{err: errors.New(`could not evaluate successCondition "result > x"`)}
	m := Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL, JSONPath: "{$.v}"}), ev.eval)
	checkError(t, m, `could not evaluate successCondition "result > x"`)
}

func TestWebTimeout(t *testing.T) {
	var rec recorder
	release := make(chan struct{})
	defer close(release)
	srv := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // should the timeout not work
	defer cancel()
	start := time.Now()
	m := Web(ctx, srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL, TimeoutSeconds: 1}), succeeding().eval)
	elapsed := time.Since(start)
	checkError(t, m, "Client.Timeout exceeded")
	if elapsed < 900*time.Millisecond || elapsed > 5*time.Second {
		t.Fatalf("took %s, want about timeoutSeconds (1s)", elapsed)
	}
}

func TestWebContextCancelled(t *testing.T) {
	var rec recorder
	arrived := make(chan struct{}, 1)
	srv := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-arrived; cancel() }()
	m := Web(ctx, srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL, TimeoutSeconds: 30}), succeeding().eval)
	checkError(t, m, "context canceled")
}

func TestWebHeadersAndBody(t *testing.T) {
	var rec recorder
	srv := rec.server(t, reply(200, `{"v":1}`))
	headers := []rolloutsapi.WebMetricHeader{
		{Key: "Authorization", Value: "Bearer first"},
		{Key: "X-Scope", Value: "canary"},
		{Key: "authorization", Value: "Bearer second"}, // Set: replaces the first
		{Key: "Content-Type", Value: "text/plain"},
	}

	m := Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{
		Method: rolloutsapi.WebMetricMethodPost, URL: srv.URL + "/q", Headers: headers, Body: "raw body",
	}), succeeding().eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful {
		t.Fatalf("measurement = %+v", m)
	}
	m = Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{
		Method: rolloutsapi.WebMetricMethodPut, URL: srv.URL + "/j", Headers: headers, JSONBody: []byte(`{"q":"up"}`),
	}), succeeding().eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful {
		t.Fatalf("measurement = %+v", m)
	}

	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %+v", reqs)
	}
	for i, want := range []request{
		{Method: "POST", Path: "/q", Body: "raw body", Header: http.Header{"Content-Type": {"text/plain"}}},
		{Method: "PUT", Path: "/j", Body: `{"q":"up"}`, Header: http.Header{"Content-Type": {"application/json"}}},
	} {
		got := reqs[i]
		if got.Method != want.Method || got.Path != want.Path || got.Body != want.Body {
			t.Errorf("request %d = %s %s %q, want %s %s %q", i, got.Method, got.Path, got.Body, want.Method, want.Path, want.Body)
		}
		if a := got.Header.Values("Authorization"); !reflect.DeepEqual(a, []string{"Bearer second"}) {
			t.Errorf("request %d: Authorization = %q", i, a)
		}
		if s := got.Header.Get("X-Scope"); s != "canary" {
			t.Errorf("request %d: X-Scope = %q", i, s)
		}
		if ct := got.Header.Values("Content-Type"); !reflect.DeepEqual(ct, want.Header["Content-Type"]) {
			t.Errorf("request %d: Content-Type = %q, want %q", i, ct, want.Header["Content-Type"])
		}
	}
}

func TestWebBodyRules(t *testing.T) {
	var rec recorder
	srv := rec.server(t, reply(200, `{}`))
	for _, tc := range []struct {
		web  rolloutsapi.WebMetric
		want string
	}{
		{rolloutsapi.WebMetric{Method: "POST", Body: "a", JSONBody: []byte(`{}`)}, "use either Body or JSONBody; both cannot exists for WebMetric payload"},
		{rolloutsapi.WebMetric{Body: "a"}, "Body/JSONBody can only be used with POST or PUT WebMetric Method types"},
		{rolloutsapi.WebMetric{Method: "GET", JSONBody: []byte(`{}`)}, "Body/JSONBody can only be used with POST or PUT WebMetric Method types"},
		{rolloutsapi.WebMetric{Authentication: rolloutsapi.Authentication{OAuth2: rolloutsapi.OAuth2Config{TokenURL: "http://t"}}}, "missing mandatory parameter in metric for OAuth2 setup"},
		{rolloutsapi.WebMetric{Authentication: rolloutsapi.Authentication{OAuth2: rolloutsapi.OAuth2Config{TokenURL: "http://t", ClientID: "i", ClientSecret: "s"}}}, "web metric authentication.oauth2 is not supported"},
	} {
		tc.web.URL = srv.URL
		m := Web(context.Background(), srv.Client(), webMetric(tc.web), succeeding().eval)
		checkError(t, m, tc.want)
	}
	if reqs := rec.requests(); len(reqs) != 0 {
		t.Fatalf("refused metrics sent requests: %+v", reqs)
	}
	checkError(t, Web(context.Background(), nil, webMetric(rolloutsapi.WebMetric{URL: srv.URL}), succeeding().eval), "no HTTP client")
	checkError(t, Web(context.Background(), srv.Client(), rolloutsapi.Metric{}, succeeding().eval), "no web provider")
}

func TestWebBodyLimit(t *testing.T) {
	var rec recorder
	big := `{"v":"` + strings.Repeat("x", MaxResponseBody) + `"}`
	srv := rec.server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			// No Content-Length: the limit is found while reading.
			for i := 0; i < len(big); i += 64 << 10 {
				_, _ = io.WriteString(w, big[i:min(i+64<<10, len(big))])
				w.(http.Flusher).Flush()
			}
			return
		}
		if r.URL.Path == "/exact" {
			_, _ = io.WriteString(w, `"`+strings.Repeat("y", MaxResponseBody-2)+`"`)
			return
		}
		_, _ = io.WriteString(w, big)
	})
	for _, path := range []string{"/sized", "/chunked"} {
		m := Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL + path}), succeeding().eval)
		checkError(t, m, "response body exceeds 1048576 bytes")
	}
	m := Web(context.Background(), srv.Client(), webMetric(rolloutsapi.WebMetric{URL: srv.URL + "/exact"}), succeeding().eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful || len(m.Value) != MaxResponseBody {
		t.Fatalf("a body of exactly MaxResponseBody: %s %q, value of %d bytes", m.Phase, m.Message, len(m.Value))
	}
}

func TestWebInsecure(t *testing.T) {
	srv := httptest.NewUnstartedServer(reply(200, `{"v":1}`))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	defer srv.Close()
	plain := &http.Client{Transport: &http.Transport{}} // trusts only the system's roots

	m := Web(context.Background(), plain, webMetric(rolloutsapi.WebMetric{URL: srv.URL}), succeeding().eval)
	checkError(t, m, "certificate")

	m = Web(context.Background(), plain, webMetric(rolloutsapi.WebMetric{URL: srv.URL, Insecure: true}), succeeding().eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful || m.Value != `{"v":1}` {
		t.Fatalf("insecure measurement = %s %q", m.Phase, m.Message)
	}
	if tc := plain.Transport.(*http.Transport).TLSClientConfig; tc != nil && tc.InsecureSkipVerify {
		t.Fatal("the caller's transport was changed")
	}
	m = Web(context.Background(), plain, webMetric(rolloutsapi.WebMetric{URL: srv.URL}), succeeding().eval)
	checkError(t, m, "certificate")

	wrapped := &http.Client{Transport: roundTripperFunc(http.DefaultTransport.RoundTrip)}
	m = Web(context.Background(), wrapped, webMetric(rolloutsapi.WebMetric{URL: srv.URL, Insecure: true}), succeeding().eval)
	checkError(t, m, "insecure is not supported: the HTTP client's transport (providers.roundTripperFunc)")
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestWebUsesTheCallersClient(t *testing.T) {
	var rec recorder
	srv := rec.server(t, reply(200, `{"v":1}`))
	refused := errors.New("host not allowed")
	c := &http.Client{Transport: roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, refused })}
	m := Web(context.Background(), c, webMetric(rolloutsapi.WebMetric{URL: srv.URL}), succeeding().eval)
	checkError(t, m, "host not allowed")
	if len(rec.requests()) != 0 {
		t.Fatal("the request went around the caller's transport")
	}
}
