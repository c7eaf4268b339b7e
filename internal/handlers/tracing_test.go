package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Each request has a span named by its route once routed, a caller's
// traceparent is its parent, the answer names its trace (traceresponse),
// probes have none, and no header reaches it.
func TestRequestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r := chi.NewRouter()
	r.Use(traceRequests(tp)...)
	r.Get("/healthz", func(http.ResponseWriter, *http.Request) {})
	r.Route("/api/v1", func(r chi.Router) {
		r.Post("/runs/{run}/actions", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	})

	req := httptest.NewRequest(http.MethodPost, "/api/v1/runs/r1/actions?code=secret-code", nil)
	req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	req.Header.Set("Authorization", "Bearer secret-token")
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))

	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1 (none for /healthz)", len(spans))
	}
	s := spans[0]
	if s.Name() != "POST /api/v1/runs/{run}/actions" {
		t.Errorf("span name %q", s.Name())
	}
	if got := s.Parent().TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" || s.Parent().SpanID().String() != "b7ad6b7169203331" {
		t.Errorf("the caller's traceparent is not the parent: %v", s.Parent())
	}
	if got, want := w.Header().Get("Traceresponse"), "00-0af7651916cd43dd8448eb211c80319c-"+s.SpanContext().SpanID().String()+"-01"; got != want {
		t.Errorf("traceresponse %q, want %q", got, want)
	}
	for _, kv := range s.Attributes() {
		if v := kv.Value.Emit(); strings.Contains(v, "secret") {
			t.Errorf("attribute %s holds %q", kv.Key, v)
		}
	}
	if traceRequests(nil) != nil {
		t.Error("tracing off still installs middleware")
	}
}

// discard is an exporter that drops every batch.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkRequestSpan: what a request's span costs (otelhttp, the route's
// name, traceresponse, the SDK's batching), against no tracing, on a
// route that does nothing: the overhead of tracing per request, alone.
func BenchmarkRequestSpan(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		r := chi.NewRouter()
		if on {
			name = "on"
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			r.Use(traceRequests(tp)...)
		}
		r.Post("/api/v1/actions", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/api/v1/actions", nil))
			}
		})
	}
}
