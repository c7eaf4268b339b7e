package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/app"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/taskactions"
	"taskactions/internal/tracing"
	"taskactions/pkg/client"
)

// otlpReceiver is an OTLP/HTTP traces endpoint (POST /v1/traces, protobuf),
// as a collector is: it keeps every span it is sent.
type otlpReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	service map[string]bool // the service.name of every batch
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{service: map[string]bool{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
			http.NotFound(w, req)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = gz
		}
		b, err := io.ReadAll(body)
		var msg coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &msg)
		}
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("the receiver got %s that does not decode: %v", req.Header.Get("Content-Type"), err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.ResourceSpans {
			r.service[attr(rs.GetResource().GetAttributes(), "service.name")] = true
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

// find returns the spans that match every condition.
func (r *otlpReceiver) find(conds ...func(*tracepb.Span) bool) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
next:
	for _, s := range r.spans {
		for _, c := range conds {
			if !c(s) {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// one waits for exactly one span to match, and returns it.
func (r *otlpReceiver) one(t *testing.T, what string, conds ...func(*tracepb.Span) bool) *tracepb.Span {
	t.Helper()
	return r.some(t, what, 1, conds...)[0]
}

// some waits for n spans to match (and no more), and returns them.
func (r *otlpReceiver) some(t *testing.T, what string, n int, conds ...func(*tracepb.Span) bool) []*tracepb.Span {
	t.Helper()
	var got []*tracepb.Span
	if !within(15*time.Second, func() bool { got = r.find(conds...); return len(got) >= n }) || len(got) != n {
		t.Fatalf("%s: %d spans, want %d; spans received:\n%s", what, len(got), n, r.dump())
	}
	return got
}

func (r *otlpReceiver) dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, s := range r.spans {
		fmt.Fprintf(&b, "  %s trace %s span %s parent %s %v\n", s.Name, hex.EncodeToString(s.TraceId), hex.EncodeToString(s.SpanId), hex.EncodeToString(s.ParentSpanId), s.Attributes)
	}
	return b.String()
}

func attr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			switch v := kv.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue
			case *commonpb.AnyValue_IntValue:
				return fmt.Sprint(v.IntValue)
			case *commonpb.AnyValue_BoolValue:
				return fmt.Sprint(v.BoolValue)
			}
		}
	}
	return ""
}

func spanNamed(name string) func(*tracepb.Span) bool {
	return func(s *tracepb.Span) bool { return s.Name == name }
}

func withAttr(key, value string) func(*tracepb.Span) bool {
	return func(s *tracepb.Span) bool { return attr(s.Attributes, key) == value }
}

func inTrace(id string) func(*tracepb.Span) bool {
	return func(s *tracepb.Span) bool { return hex.EncodeToString(s.TraceId) == id }
}

func childOf(p *tracepb.Span) func(*tracepb.Span) bool {
	return func(s *tracepb.Span) bool {
		return bytes.Equal(s.ParentSpanId, p.SpanId) && bytes.Equal(s.TraceId, p.TraceId)
	}
}

func action(name string) func(*tracepb.Span) bool { return withAttr("taskactions.action", name) }

func spanID(s *tracepb.Span) string { return hex.EncodeToString(s.SpanId) }

// traceOf is the trace id of a W3C traceparent (or traceresponse) value.
func traceOf(t *testing.T, tp string) string {
	t.Helper()
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || len(parts[1]) != 32 {
		t.Fatalf("%q is not a traceparent", tp)
	}
	return parts[1]
}

// A run is one trace, over OTLP/HTTP to a receiver of the test's: rooted
// at the request that enqueued its root action, each action's enqueue
// under its parent action's (or under the request a task made with the
// TRACEPARENT it was given), each attempt under its action's enqueue (two
// for a child that failed once and was retried), and the plugin's work
// under its attempt: the process (whose environment had TRACEPARENT) and
// the http task's request (whose target got traceparent). A Promotion is
// one too, rooted at the request that made it.
func TestTracesOfRunsAndPromotions(t *testing.T) {
	recv := newOTLPReceiver(t)
	target := newRecorder(t)
	s, err := startServer(filepath.Join(t.TempDir(), "data"), func(c *app.Config) {
		c.Tracing = tracing.Config{Enabled: true, Endpoint: recv.URL + "/v1/traces", BatchTimeout: 50 * time.Millisecond}
		c.ExecutorTaskTypes = "*" // the Kargo steps too
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	ctx := context.Background()
	run := newRun()

	// a0 records the TRACEPARENT it was given, and enqueues c1 with it.
	script := taskCodes + `printf %s "$TRACEPARENT" > traceparent
c1=$(code -X POST -H 'Content-Type: application/json' -H "traceparent: $TRACEPARENT" -d "$(child "$r" c1 '{"type":"echo"}')" "$api/actions")
echo "c1=$c1" > result`
	req := actionSpec(run, "a0", "", "process")
	cmd := []string{"sh", "-c", script}
	req.Action.Task.TaskTemplate.Container = &client.Container{Command: &cmd}
	resp, err := s.api.EnqueueActionWithResponse(ctx, req)
	if err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue a0: %v %s", err, resp.Body)
	}
	runTrace := traceOf(t, resp.HTTPResponse.Header.Get("Traceresponse"))

	// c2 fails its first attempt and is retried; c3 calls the target.
	// The test's requests carry no traceparent: each is a trace of its
	// own, and the actions they make go in the run's.
	c2 := actionSpec(run, "c2", "a0", "process")
	retryOnce := []string{"sh", "-c", `[ "$TASKACTIONS_ATTEMPT" = 1 ] && exit 3; exit 0`}
	retries := int32(1)
	c2.Action.Task.TaskTemplate.Container = &client.Container{Command: &retryOnce}
	c2.Action.Task.TaskTemplate.Metadata = &client.TaskMetadata{Retries: &retries}
	c3 := actionSpec(run, "c3", "a0", "http")
	custom := map[string]any{"url": target.URL + "/hook"}
	c3.Action.Task.TaskTemplate.Custom = &custom
	var childTraces []string
	for _, r := range []client.EnqueueRequest{c2, c3} {
		resp, err := s.api.EnqueueActionWithResponse(ctx, r)
		if err != nil || resp.StatusCode() != http.StatusCreated {
			t.Fatalf("enqueue %s: %v %s", r.Action.ActionId.Name, err, resp.Body)
		}
		childTraces = append(childTraces, traceOf(t, resp.HTTPResponse.Header.Get("Traceresponse")))
	}
	for _, name := range []string{"a0", "c2", "c3"} {
		if a := waitAction(t, s.api, run, name, terminal); a.Phase != client.SUCCEEDED {
			t.Fatalf("%s ended %s: %+v", name, a.Phase, a.ErrorState)
		}
	}
	if got := outputFile(t, s, run, "a0", "result"); got != "c1=201" {
		t.Fatalf("a0 enqueued c1: %s", got)
	}
	if a := waitAction(t, s.api, run, "c1", terminal); a.Phase != client.SUCCEEDED {
		t.Fatalf("c1 ended %s", a.Phase)
	}

	inRun := inTrace(runTrace)
	reqA0 := recv.one(t, "the request that enqueued a0", spanNamed("POST /api/v1/actions"), inRun, func(s *tracepb.Span) bool { return len(s.ParentSpanId) == 0 })
	if reqA0.Kind != tracepb.Span_SPAN_KIND_SERVER || attr(reqA0.Attributes, "http.response.status_code") != "201" || attr(reqA0.Attributes, "http.route") != "/api/v1/actions" {
		t.Errorf("the request's span: kind %v, attributes %v", reqA0.Kind, reqA0.Attributes)
	}
	enqA0 := recv.one(t, "a0's enqueue", spanNamed("enqueue process"), action("a0"), childOf(reqA0))
	attA0 := recv.one(t, "a0's attempt", spanNamed("attempt process"), action("a0"), childOf(enqA0))
	procA0 := recv.one(t, "a0's process", spanNamed("process"), childOf(attA0))
	if got, want := outputFile(t, s, run, "a0", "traceparent"), "00-"+runTrace+"-"+spanID(procA0)+"-01"; got != want {
		t.Errorf("a0's TRACEPARENT is %q, want its process span's %q", got, want)
	}
	// c1 was enqueued by a0's task with its TRACEPARENT: under its process.
	reqC1 := recv.one(t, "a0's task's request", spanNamed("POST /api/v1/actions"), childOf(procA0))
	enqC1 := recv.one(t, "c1's enqueue", spanNamed("enqueue echo"), action("c1"), childOf(reqC1))
	recv.one(t, "c1's attempt", spanNamed("attempt echo"), action("c1"), childOf(enqC1))

	// c2 and c3: under a0's enqueue, though the requests were of traces of their own.
	for i, tr := range childTraces {
		if tr == runTrace {
			t.Errorf("the test's request %d is in the run's trace", i)
		}
	}
	enqC2 := recv.one(t, "c2's enqueue", spanNamed("enqueue process"), action("c2"), childOf(enqA0))
	attempts := recv.some(t, "c2's attempts", 2, spanNamed("attempt process"), action("c2"), childOf(enqC2))
	for _, a := range attempts {
		n := attr(a.Attributes, "taskactions.attempt")
		wantErr := n == "1"
		if got := a.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR; got != wantErr {
			t.Errorf("c2's attempt %s: status %v %q", n, a.Status.GetCode(), a.Status.GetMessage())
		}
		proc := recv.one(t, "c2's process of attempt "+n, spanNamed("process"), childOf(a))
		if code := attr(proc.Attributes, "process.exit.code"); (n == "1") != (code == "3") {
			t.Errorf("c2's process of attempt %s exited %s", n, code)
		}
	}
	enqC3 := recv.one(t, "c3's enqueue", spanNamed("enqueue http"), action("c3"), childOf(enqA0))
	attC3 := recv.one(t, "c3's attempt", spanNamed("attempt http"), action("c3"), childOf(enqC3))
	httpC3 := recv.one(t, "c3's request", spanNamed("http GET"), childOf(attC3))
	if httpC3.Kind != tracepb.Span_SPAN_KIND_CLIENT || attr(httpC3.Attributes, "http.response.status_code") != "200" {
		t.Errorf("c3's request span: kind %v, attributes %v", httpC3.Kind, httpC3.Attributes)
	}
	if hits := target.to("/hook"); len(hits) != 1 || hits[0].Header.Get("Traceparent") != "00-"+runTrace+"-"+spanID(httpC3)+"-01" {
		t.Errorf("the target got %d requests (%v); want one with its span's traceparent", len(hits), hits)
	}
	// The context is on the object, and in the action's view.
	ta, err := s.app.Manager().GetTaskAction(ctx, taskactions.ActionID{Project: run.Project, Domain: run.Domain, Run: run.Name, Name: "c2"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ta.Annotations[tracing.AnnotationTraceparent], "00-"+runTrace+"-"+spanID(enqC2)+"-01"; got != want {
		t.Errorf("c2's annotation %q, want its enqueue's %q", got, want)
	}
	if got := taskactions.ViewOf(ta).TraceID; got != runTrace {
		t.Errorf("c2's view has trace id %q, want %q", got, runTrace)
	}
	// And through the API, as a client reads it.
	if got, err := s.api.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, "c2"); err != nil || got.JSON200 == nil ||
		got.JSON200.TraceId == nil || *got.JSON200.TraceId != runTrace {
		t.Errorf("GET c2: %v %v; want traceId %s", err, got, runTrace)
	}

	// A Promotion: the request that made it, its run's root action, each
	// step's action under it, the step's attempt, and the step's work.
	k := newKProject(t, s)
	k.createStage("test", direct(), nil,
		pstep("compose-output", "out", map[string]any{"x": "y"}),
		pstep("http", "call", map[string]any{"url": target.URL + "/promo"}))
	f := k.createFreight("1.0.0", "")
	r := k.do(http.MethodPost, "/stages/test/promotions", fmt.Sprintf(`{"freight":%q}`, f.Name))
	p := into[kargoapi.Promotion](t, r, http.StatusCreated)
	if got := k.finished(p.Name); got.Status.Phase != kargoapi.PromotionPhaseSucceeded {
		t.Fatalf("the Promotion ended %s: %s", got.Status.Phase, got.Status.Message)
	}
	promoTrace := traceOf(t, r.header.Get("Traceresponse"))
	inPromo := inTrace(promoTrace)
	reqP := recv.one(t, "the promote request", spanNamed("POST /api/v1/projects/{project}/stages/{stage}/promotions"), inPromo)
	root := recv.one(t, "the Promotion's root action", spanNamed("enqueue "+promotions.RootTaskType), childOf(reqP))
	enq1 := recv.one(t, "step 1's enqueue", spanNamed("enqueue compose-output"), childOf(root))
	att1 := recv.one(t, "step 1's attempt", spanNamed("attempt compose-output"), childOf(enq1))
	recv.one(t, "step 1's work", spanNamed("step compose-output"), childOf(att1), withAttr("kargo.step.status", "Succeeded"))
	enq2 := recv.one(t, "step 2's enqueue", spanNamed("enqueue http"), childOf(root))
	att2 := recv.one(t, "step 2's attempt", spanNamed("attempt http"), childOf(enq2))
	http2 := recv.one(t, "step 2's request", spanNamed("http GET"), childOf(att2))
	if hits := target.to("/promo"); len(hits) != 1 || hits[0].Header.Get("Traceparent") != "00-"+promoTrace+"-"+spanID(http2)+"-01" {
		t.Errorf("the step's target got %d requests, traceparent %v", len(hits), hits)
	}

	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.service) != 1 || !recv.service[tracing.DefaultServiceName] {
		t.Errorf("service names %v, want %s", recv.service, tracing.DefaultServiceName)
	}
	for _, sp := range recv.spans {
		if strings.HasPrefix(sp.Name, "GET /healthz") || strings.HasPrefix(sp.Name, "GET /readyz") {
			t.Errorf("a probe has a span: %s", sp.Name)
		}
	}
}
