package tracing

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
)

const sample = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func remote(t *testing.T, tp, ts string) context.Context {
	t.Helper()
	ctx := FromAnnotations(context.Background(), map[string]string{AnnotationTraceparent: tp, AnnotationTracestate: ts})
	if !trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatalf("%q does not parse", tp)
	}
	return ctx
}

// A context stored in annotations comes back as it went; one that is too
// long a tracestate is dropped, not stored; none removes what a child
// inherited.
func TestAnnotationsCarryTheContext(t *testing.T) {
	ctx := remote(t, sample, "vendor=x")
	a := Annotate(ctx, nil)
	if a[AnnotationTraceparent] != sample || a[AnnotationTracestate] != "vendor=x" {
		t.Fatalf("annotations %v", a)
	}
	if got := TraceID(a); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("TraceID %q", got)
	}
	long := "a=" + strings.Repeat("b", 255) + ",c=" + strings.Repeat("d", 255)
	if a := Annotate(remote(t, sample, long), map[string]string{AnnotationTracestate: "old=1"}); a[AnnotationTracestate] != "" {
		t.Errorf("a tracestate of %d bytes was stored", len(long))
	}
	inherited := map[string]string{AnnotationTraceparent: sample, AnnotationTracestate: "v=1", "other": "kept"}
	if a := Annotate(context.Background(), inherited); len(a) != 1 || a["other"] != "kept" {
		t.Errorf("no context: %v", a)
	}
	if env := Env(ctx); len(env) != 2 || env[0] != "TRACEPARENT="+sample || env[1] != "TRACESTATE=vendor=x" {
		t.Errorf("Env %v", env)
	}
	if env := Env(context.Background()); env != nil {
		t.Errorf("Env without a context: %v", env)
	}
}

func TestTraceIDRefusesWhatIsNotATraceparent(t *testing.T) {
	for _, tp := range []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331", "00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} {
		if got := TraceID(map[string]string{AnnotationTraceparent: tp}); got != "" {
			t.Errorf("TraceID(%q) = %q", tp, got)
		}
	}
}

func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		wantErr string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "OTLP/HTTP"},
		// The traces' own protocol wins over the general one.
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, on: true},
	} {
		cfg, err := FromEnv(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: error %v, want %q", c.env, err, c.wantErr)
			}
			continue
		}
		if err != nil || cfg.Enabled != c.on {
			t.Errorf("%v: %+v %v, want enabled %v", c.env, cfg, err, c.on)
		}
	}
}

// Off, Setup makes nothing, and Start makes no span under a context that
// has none.
func TestOffMakesNothing(t *testing.T) {
	tp, stop, err := Setup(context.Background(), Config{}, zerologNop)
	if err != nil || tp != nil || stop(context.Background()) != nil {
		t.Fatalf("Setup off: %v %v", tp, err)
	}
	ctx := context.Background()
	got, span := Start(ctx, "x")
	if got != ctx || span.SpanContext().IsValid() {
		t.Errorf("Start without a recording parent made a span")
	}
	if n := testing.AllocsPerRun(100, func() { _, s := Start(ctx, "x"); End(s, nil) }); n != 0 {
		t.Errorf("Start without a recording parent allocates %v times", n)
	}
}

var zerologNop = zerolog.Nop()

// Reserve makes room for exactly what Annotate stores under a span started
// in the same context: an object's size is checked before its span starts.
func TestReserveIsAnnotatesSize(t *testing.T) {
	for _, ctx := range []context.Context{remote(t, sample, ""), remote(t, sample, "vendor=x,other=y")} {
		r := Reserve(ctx, nil)
		a := Annotate(ctx, map[string]string{})
		if len(r) != len(a) || len(r[AnnotationTraceparent]) != len(a[AnnotationTraceparent]) || r[AnnotationTracestate] != a[AnnotationTracestate] {
			t.Errorf("Reserve %v, Annotate %v", r, a)
		}
	}
}
