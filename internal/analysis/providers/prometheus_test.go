package providers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// promQuery is a query a fake Prometheus received.
type promQuery struct {
	Method, Path string
	Form         url.Values
	Header       http.Header
}

// fakePrometheus speaks the Prometheus HTTP API: each query is answered
// with status and body.
type fakePrometheus struct {
	mu      sync.Mutex
	queries []promQuery
	status  int
	body    string
	delay   time.Duration
	noPost  bool // 405 to POST, as a read-only proxy may
}

func (f *fakePrometheus) start(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f.mu.Lock()
		f.queries = append(f.queries, promQuery{Method: r.Method, Path: r.URL.Path, Form: r.Form, Header: r.Header.Clone()})
		status, body, delay, noPost := f.status, f.body, f.delay, f.noPost
		f.mu.Unlock()
		if noPost && r.Method == http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		if status == 0 {
			status = 200
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (f *fakePrometheus) received() []promQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]promQuery(nil), f.queries...)
}

func promMetric(p rolloutsapi.PrometheusMetric) rolloutsapi.Metric {
	return rolloutsapi.Metric{Name: "m", Provider: rolloutsapi.MetricProvider{Prometheus: &p}}
}

func success(data string) string { return `{"status":"success","data":` + data + `}` }

func TestPrometheusResults(t *testing.T) {
	for _, tc := range []struct {
		name      string
		data      string
		wantValue string
		wantGot   any
	}{
		{"vector", `{"resultType":"vector","result":[{"metric":{"job":"a"},"value":[1700000000.5,"0.99"]}]}`, "[0.99]", []float64{0.99}},
		{"vector of two", `{"resultType":"vector","result":[{"metric":{"job":"a"},"value":[1700000000,"0.99"]},{"metric":{"job":"b"},"value":[1700000000,"1"]}]}`, "[0.99,1]", []float64{0.99, 1}},
		{"empty vector", `{"resultType":"vector","result":[]}`, "[]", []float64{}},
		{"scalar", `{"resultType":"scalar","result":[1700000000,"0.5"]}`, "0.5", 0.5},
		{"NaN scalar", `{"resultType":"scalar","result":[1700000000,"NaN"]}`, "NaN", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakePrometheus{body: success(tc.data)}
			srv := fake.start(t)
			ev := &fakeEval{phase: rolloutsapi.AnalysisPhaseInconclusive}
			m := Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{
				Address: srv.URL, Query: `sum(rate(ok[5m])) / sum(rate(all[5m]))`,
			}), ev.eval)
			if m.Phase != rolloutsapi.AnalysisPhaseInconclusive || m.Value != tc.wantValue || m.Message != "" || m.FinishedAt == nil {
				t.Fatalf("measurement = %s %q %q, want Inconclusive (the evaluator's) %q", m.Phase, m.Value, m.Message, tc.wantValue)
			}
			if len(ev.got) != 1 {
				t.Fatalf("evaluator got %#v", ev.got)
			}
			if tc.wantGot == nil { // NaN
				if f, ok := ev.got[0].(float64); !ok || f == f {
					t.Fatalf("evaluator got %#v, want NaN", ev.got[0])
				}
			} else if !reflect.DeepEqual(ev.got[0], tc.wantGot) {
				t.Fatalf("evaluator got %#v (%T), want %#v (%T)", ev.got[0], ev.got[0], tc.wantGot, tc.wantGot)
			}
			qs := fake.received()
			if len(qs) != 1 || qs[0].Method != "POST" || qs[0].Path != "/api/v1/query" ||
				qs[0].Form.Get("query") != `sum(rate(ok[5m])) / sum(rate(all[5m]))` || qs[0].Form.Get("time") == "" {
				t.Fatalf("queries = %+v", qs)
			}
			ts, _ := strconv.ParseFloat(qs[0].Form.Get("time"), 64)
			if d := time.Since(time.Unix(int64(ts), 0)); d < -time.Second || d > time.Minute {
				t.Fatalf("query time %v is not now", qs[0].Form.Get("time"))
			}
		})
	}
}

func TestPrometheusErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"bad data", `{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected right parenthesis ')'"}`, 400,
			"bad_data: 1:5: parse error: unexpected right parenthesis ')'"},
		{"execution", `{"status":"error","errorType":"execution","error":"query timed out in expression evaluation"}`, 422,
			"execution: query timed out in expression evaluation"},
		{"server error", "upstream down", 503, "server_error: server error: 503"},
		{"error with 200", `{"status":"error","errorType":"internal","error":"boom"}`, 200, "internal: boom"},
		{"not JSON", "<html>", 200, "bad_response: "},
		{"string result", success(`{"resultType":"string","result":[1700000000,"hello"]}`), 200, `bad_response: unexpected value type "string"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakePrometheus{status: tc.status, body: tc.body}
			srv := fake.start(t)
			ev := succeeding()
			m := Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up"}), ev.eval)
			checkError(t, m, tc.want)
			if len(ev.got) != 0 {
				t.Fatalf("evaluator called with %v", ev.got)
			}
		})
	}
}

func TestPrometheusOtherResultType(t *testing.T) {
	// The client library refuses a string result itself (above); any
	// other value is Rollouts' "not supported".
	ev := succeeding()
	value, phase, err := processPrometheusResponse(promMetric(rolloutsapi.PrometheusMetric{}), ev.eval, &model.String{Value: "x"})
	if value != "" || phase != rolloutsapi.AnalysisPhaseError || err == nil || err.Error() != "Prometheus metric type not supported" || len(ev.got) != 0 {
		t.Fatalf("= %q %s %v (evaluated %v)", value, phase, err, ev.got)
	}
}

func TestPrometheusEvaluatorError(t *testing.T) {
	fake := &fakePrometheus{body: success(`{"resultType":"vector","result":[]}`)}
	srv := fake.start(t)
	ev := &fakeEval{err: errors.New(`could not evaluate successCondition "result[0] > 1": metric result is nil or empty`)}
	m := Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up"}), ev.eval)
	checkError(t, m, "metric result is nil or empty")
}

func TestPrometheusWarnings(t *testing.T) {
	fake := &fakePrometheus{body: `{"status":"success","warnings":["partial response","slow"],"data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2"]}]}}`}
	srv := fake.start(t)
	m := Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up"}), succeeding().eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful || m.Value != "[2]" {
		t.Fatalf("measurement = %+v", m)
	}
	if want := map[string]string{"warnings": `"partial response", "slow"`}; !reflect.DeepEqual(m.Metadata, want) {
		t.Fatalf("metadata = %q, want %q", m.Metadata, want)
	}
}

func TestPrometheusRangeQuery(t *testing.T) {
	fake := &fakePrometheus{body: success(`{"resultType":"matrix","result":[
		{"metric":{"pod":"a"},"values":[[1700000000,"1"],[1700000060,"0.25"]]},
		{"metric":{"pod":"b"},"values":[[1700000000,"3"]]}]}`)}
	srv := fake.start(t)
	ev := succeeding()
	m := Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{
		Address: srv.URL, Query: "errors",
		RangeQuery: &rolloutsapi.PrometheusRangeQueryArgs{Start: `now() - duration("1h")`, End: "now()", Step: "1m"},
	}), ev.eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful || m.Value != "[1,0.25,3]" {
		t.Fatalf("measurement = %s %q %q", m.Phase, m.Value, m.Message)
	}
	if !reflect.DeepEqual(ev.got, []any{[]float64{1, 0.25, 3}}) {
		t.Fatalf("evaluator got %#v", ev.got)
	}
	qs := fake.received()
	if len(qs) != 1 || qs[0].Path != "/api/v1/query_range" || qs[0].Form.Get("query") != "errors" || qs[0].Form.Get("step") != "60" {
		t.Fatalf("queries = %+v", qs)
	}
	start, _ := strconv.ParseFloat(qs[0].Form.Get("start"), 64)
	end, _ := strconv.ParseFloat(qs[0].Form.Get("end"), 64)
	if d := end - start; d < 3599 || d > 3601 {
		t.Fatalf("range start %v end %v: want an hour", start, end)
	}
	if d := time.Since(time.Unix(int64(end), 0)); d < -time.Second || d > time.Minute {
		t.Fatalf("range end %v is not now", end)
	}

	for _, tc := range []struct {
		r    rolloutsapi.PrometheusRangeQueryArgs
		want string
	}{
		{rolloutsapi.PrometheusRangeQueryArgs{Start: "now(", End: "now()", Step: "1m"}, "failed to parse rangeQuery.start as time: "},
		{rolloutsapi.PrometheusRangeQueryArgs{Start: "now()", End: "1 + 1", Step: "1m"}, "failed to parse rangeQuery.end as time: expected time.Time, but got int"},
		{rolloutsapi.PrometheusRangeQueryArgs{Start: "now()", End: "now()", Step: "often"}, `failed to parse rangeQuery.step as duration: time: invalid duration "often"`},
	} {
		before := len(fake.received())
		m := Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "q", RangeQuery: &tc.r}), succeeding().eval)
		checkError(t, m, tc.want)
		if len(fake.received()) != before {
			t.Fatalf("%+v: queried anyway", tc.r)
		}
	}
}

func TestPrometheusAddressPathHeadersAndGetFallback(t *testing.T) {
	fake := &fakePrometheus{body: success(`{"resultType":"scalar","result":[1,"7"]}`), noPost: true}
	srv := fake.start(t)
	m := Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{
		Address: srv.URL + "/prom/", Query: "up",
		Headers: []rolloutsapi.WebMetricHeader{{Key: "Authorization", Value: "Bearer t0ken"}, {Key: "X-Scope-OrgID", Value: "tenant"}},
	}), succeeding().eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful || m.Value != "7" {
		t.Fatalf("measurement = %s %q %q", m.Phase, m.Value, m.Message)
	}
	qs := fake.received()
	if len(qs) != 2 || qs[0].Method != "POST" || qs[1].Method != "GET" {
		t.Fatalf("queries = %+v, want POST then GET", qs)
	}
	for _, q := range qs {
		if q.Path != "/prom/api/v1/query" || q.Form.Get("query") != "up" {
			t.Errorf("query %s %s %v", q.Method, q.Path, q.Form)
		}
		if q.Header.Get("Authorization") != "Bearer t0ken" || q.Header.Get("X-Scope-OrgID") != "tenant" {
			t.Errorf("%s headers = %v", q.Method, q.Header)
		}
	}
}

func TestPrometheusTimeout(t *testing.T) {
	fake := &fakePrometheus{body: success(`{"resultType":"vector","result":[]}`), delay: 10 * time.Second}
	srv := fake.start(t)
	one := int64(1)
	start := time.Now()
	m := Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up", Timeout: &one}), succeeding().eval)
	elapsed := time.Since(start)
	checkError(t, m, "context deadline exceeded")
	if elapsed < 900*time.Millisecond || elapsed > 5*time.Second {
		t.Fatalf("took %s, want about the timeout (1s)", elapsed)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	m = Prometheus(ctx, srv.Client(), promMetric(rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up"}), succeeding().eval)
	checkError(t, m, "context canceled")
}

func TestPrometheusRefusedConfigs(t *testing.T) {
	fake := &fakePrometheus{body: success(`{"resultType":"vector","result":[]}`)}
	srv := fake.start(t)
	minus := int64(-1)
	for _, tc := range []struct {
		p    rolloutsapi.PrometheusMetric
		want string
	}{
		{rolloutsapi.PrometheusMetric{Query: "up"}, "prometheus address is not configured"},
		{rolloutsapi.PrometheusMetric{Address: "prometheus:9090", Query: "up"}, "prometheus address is not is url format"},
		{rolloutsapi.PrometheusMetric{Address: "/api", Query: "up"}, "prometheus address is not is url format"},
		{rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up", Timeout: &minus}, "prometheus timeout should not be negative"},
		{rolloutsapi.PrometheusMetric{Address: srv.URL + "/workspaces/aps-workspaces/x", Query: "up",
			Authentication: rolloutsapi.Authentication{Sigv4: rolloutsapi.Sigv4Config{Region: "eu-west-1"}}}, "prometheus authentication.sigv4 is not supported"},
		{rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up",
			Authentication: rolloutsapi.Authentication{OAuth2: rolloutsapi.OAuth2Config{TokenURL: "http://t", ClientID: "i"}}}, "missing mandatory parameter in metric for OAuth2 setup"},
		{rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up",
			Authentication: rolloutsapi.Authentication{OAuth2: rolloutsapi.OAuth2Config{TokenURL: "http://t", ClientID: "i", ClientSecret: "s"}}}, "prometheus authentication.oauth2 is not supported"},
	} {
		checkError(t, Prometheus(context.Background(), srv.Client(), promMetric(tc.p), succeeding().eval), tc.want)
	}
	if qs := fake.received(); len(qs) != 0 {
		t.Fatalf("refused metrics queried: %+v", qs)
	}

	// sigv4 where Rollouts would not sign (not Amazon Managed Prometheus)
	// is ignored, as Rollouts ignores it.
	m := Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up",
		Authentication: rolloutsapi.Authentication{Sigv4: rolloutsapi.Sigv4Config{Region: "eu-west-1"}}}), succeeding().eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful {
		t.Fatalf("measurement = %s %q", m.Phase, m.Message)
	}
	// timeout: 0 is the default here (Rollouts would fail the query at once).
	zero := int64(0)
	m = Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up", Timeout: &zero}), succeeding().eval)
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful {
		t.Fatalf("timeout 0: measurement = %s %q", m.Phase, m.Message)
	}
	checkError(t, Prometheus(context.Background(), srv.Client(), rolloutsapi.Metric{}, succeeding().eval), "no prometheus provider")
}

func TestPrometheusBodyLimit(t *testing.T) {
	big := success(`{"resultType":"vector","result":[{"metric":{"x":"` + strings.Repeat("x", MaxResponseBody) + `"},"value":[1,"1"]}]}`)
	fake := &fakePrometheus{body: big}
	srv := fake.start(t)
	m := Prometheus(context.Background(), srv.Client(), promMetric(rolloutsapi.PrometheusMetric{Address: srv.URL, Query: "up"}), succeeding().eval)
	checkError(t, m, "response body exceeds 1048576 bytes")
}

func TestPrometheusMetadata(t *testing.T) {
	if got := PrometheusMetadata(promMetric(rolloutsapi.PrometheusMetric{Query: "up == 1"})); !reflect.DeepEqual(got, map[string]string{ResolvedPrometheusQuery: "up == 1"}) {
		t.Fatalf("metadata = %v", got)
	}
	if got := PrometheusMetadata(webMetric(rolloutsapi.WebMetric{})); got != nil {
		t.Fatalf("metadata of a web metric = %v", got)
	}
}
