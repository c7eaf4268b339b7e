package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"taskactions/internal/tracing"
)

// traceRequests are the middlewares that give each request a span
// (otelhttp), outermost, so that the span covers the whole answer and the
// request's log lines can name its trace (withID). A caller's W3C
// traceparent is the span's parent: a task that passes its TRACEPARENT on
// puts its enqueues in its run's trace. None when tracing is off (tp nil):
// no span, no wrapper, no frame.
//
// What a span holds is otelhttp's: method, path (never the query, where a
// login code travels), route, status, sizes, peer and user agent; never a
// header, so no token or cookie.
//
// Probes and /metrics, scraped every few seconds, get none. A stream's span
// ends when the stream is synced and leaves its handler (sse: detach,
// park), a log tail's once it sent what the log held (sse.Tail): a span
// open for a stream's whole life would be held in memory, and shown by no
// backend, for hours.
func traceRequests(tp trace.TracerProvider) []func(http.Handler) http.Handler {
	if tp == nil {
		return nil
	}
	otel := otelhttp.NewMiddleware("http",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(tracing.Propagator),
		// The server's metrics are Prometheus' (metrics.go): otelhttp's
		// would only be computed to be dropped.
		otelhttp.WithMeterProvider(noopmetric.NewMeterProvider()),
		otelhttp.WithFilter(func(r *http.Request) bool {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/metrics":
				return false
			}
			return true
		}),
		// Named by the method until routed, then by the route: nameSpan
		// names it, and so does otelhttp when chi set the request's Pattern
		// (its route within the last router only, so the name is chi's).
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return spanName(r) }),
	)
	return []func(http.Handler) http.Handler{otel, nameSpan}
}

// nameSpan names the request's span by its route template, once routed
// ("POST /api/v1/actions"), as the metrics are keyed; and answers with the
// W3C traceresponse header (Trace Context Level 2), so a caller learns the
// trace of its request (for an enqueue, the run's) with no change to the
// API's bodies.
func nameSpan(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		span := trace.SpanFromContext(r.Context())
		if sc := span.SpanContext(); sc.IsValid() {
			w.Header().Set("Traceresponse", tracing.Traceparent(sc))
		}
		next.ServeHTTP(w, r)
		nameByRoute(span, r)
	})
}

// nameByRoute is nameSpan's work after the answer (a function of its own
// for the frame's sake; see withID).
//
//go:noinline
func nameByRoute(span trace.Span, r *http.Request) {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		span.SetName(spanName(r))
		span.SetAttributes(attribute.String("http.route", rc.RoutePattern()))
	}
}

// spanName is "METHOD route" once routed, else the method.
func spanName(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		return r.Method + " " + rc.RoutePattern()
	}
	return r.Method
}
