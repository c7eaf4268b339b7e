// Package tracing is the server's OpenTelemetry traces: a TracerProvider
// exporting over OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_* variables
// name an endpoint, and nothing at all when they do not; and the W3C trace
// context carried where a run's trace must cross a process, a restart or a
// replica: a TaskAction's annotations, a process task's environment, an
// http step's request.
//
// The trace of a run (docs/operations.md, Tracing):
//
//	POST /api/v1/actions                  the enqueue request (a caller's traceparent is its parent)
//	└─ enqueue <taskType>                  the root action; its context is stored on the object
//	   ├─ attempt <taskType>               each attempt, started by the executor from that context
//	   │  └─ process | http GET | step …   the plugin's work
//	   └─ enqueue <taskType>               a child, under its parent action's enqueue
//	      └─ attempt <taskType> …
//
// The context lives on the object (AnnotationTraceparent, written in the
// create itself, never in a write of its own), so the executor of another
// replica, or of this one after a restart, puts its attempts in the run's
// trace. Nothing here is global: each server (tests run several in one
// process) has its own provider, handed to what makes spans, and spans
// below them take their provider from their parent's (Start).
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Config says whether and where traces go. cmd/server fills it from the
// environment (FromEnv); everything else about the export (headers,
// certificates, compression, timeout, sampler, batching) the SDK and the
// exporter read from the standard variables themselves.
type Config struct {
	// Enabled exports traces; off, no span is made anywhere and nothing is
	// added to any object.
	Enabled bool
	// Endpoint, when set, is the OTLP/HTTP traces URL
	// (http://collector:4318/v1/traces), in place of the environment's
	// (for tests, which run several servers in one process).
	Endpoint string
	// BatchTimeout is how long a span waits to be sent with others (zero:
	// the SDK's 5 s, or OTEL_BSP_SCHEDULE_DELAY).
	BatchTimeout time.Duration
}

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) says otherwise.
const DefaultServiceName = "taskactions"

// FromEnv is the configuration the standard variables give: tracing is on
// when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set, unless OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none.
// Only OTLP over HTTP is spoken: OTEL_EXPORTER_OTLP_PROTOCOL=grpc is
// refused rather than silently sent as HTTP to a gRPC port.
func FromEnv(lookup func(string) (string, bool)) (Config, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	on := get("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(get("OTEL_TRACES_EXPORTER"), "none") {
		on = false
	}
	if !on {
		return Config{}, nil
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := get(k); p != "" {
			if p != "http/protobuf" {
				return Config{}, fmt.Errorf("%s=%s: this server exports traces over OTLP/HTTP (http/protobuf) only", k, p)
			}
			break
		}
	}
	return Config{Enabled: true}, nil
}

// Propagator is the W3C trace context (traceparent, tracestate), for the
// HTTP server and everything this package carries.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Setup builds the TracerProvider of cfg. Off, it returns a nil provider
// and a shutdown that does nothing: the callers then make no span at all
// (not even no-op ones), which is what "off" costs. On, shutdown flushes
// what is pending and stops the exporter; the app's lifecycle calls it
// last, after every part that makes spans has stopped.
func Setup(ctx context.Context, cfg Config, log zerolog.Logger) (trace.TracerProvider, func(context.Context) error, error) {
	if !cfg.Enabled {
		return nil, func(context.Context) error { return nil }, nil
	}
	var opts []otlptracehttp.Option
	if cfg.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// Detectors merge in order, later ones winning: our default name, then
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, nil, errors.Join(fmt.Errorf("trace resource: %w", err), exp.Shutdown(ctx))
	}
	var bopts []sdktrace.BatchSpanProcessorOption
	if cfg.BatchTimeout > 0 {
		bopts = append(bopts, sdktrace.WithBatchTimeout(cfg.BatchTimeout))
	}
	// The sampler is the SDK's default, parent-based always-on, or
	// OTEL_TRACES_SAMPLER's: a run is sampled or not as its enqueue
	// request was, and its attempts follow (they are its children).
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, bopts...), sdktrace.WithResource(res))
	routeErrors(log)
	log.Info().Str("service", serviceName(res)).Msg("tracing: exporting spans over OTLP/HTTP")
	return tp, tp.Shutdown, nil
}

func serviceName(res *resource.Resource) string {
	if v, ok := res.Set().Value("service.name"); ok {
		return v.AsString()
	}
	return DefaultServiceName
}

var routeOnce sync.Once

// routeErrors logs the SDK's errors (an export that failed: the collector
// is down) through the server's logger, at most one line a minute, instead
// of the standard logger's line every batch. The handler is the SDK's one
// global; the first server of the process sets it.
func routeErrors(log zerolog.Logger) {
	routeOnce.Do(func() {
		var mu sync.Mutex
		var last time.Time
		var dropped int
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			mu.Lock()
			defer mu.Unlock()
			if time.Since(last) < time.Minute {
				dropped++
				return
			}
			log.Warn().Err(err).Int("suppressed", dropped).Msg("tracing: spans could not be exported")
			last, dropped = time.Now(), 0
		}))
	})
}

// The annotations of a TaskAction (and a Promotion) that carry the span
// context it was made in: W3C traceparent and tracestate values.
const (
	AnnotationTraceparent = "taskactions.io/traceparent"
	AnnotationTracestate  = "taskactions.io/tracestate"
)

// maxTracestate bounds a stored tracestate: W3C asks propagators to keep
// at least 512 characters and lets them drop a longer one, and it is paid
// on every object of the run.
const maxTracestate = 512

// Annotate records ctx's span context in annotations (allocated when nil)
// and returns them; with no valid span context it removes what an object
// inherited (a child copies its parent's annotations) and sets nothing.
func Annotate(ctx context.Context, annotations map[string]string) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		delete(annotations, AnnotationTraceparent)
		delete(annotations, AnnotationTracestate)
		return annotations
	}
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	tp := c["traceparent"]
	if tp == "" {
		delete(annotations, AnnotationTraceparent)
		delete(annotations, AnnotationTracestate)
		return annotations
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationTraceparent] = tp
	if ts := c["tracestate"]; ts != "" && len(ts) <= maxTracestate {
		annotations[AnnotationTracestate] = ts
	} else {
		delete(annotations, AnnotationTracestate)
	}
	return annotations
}

// placeholder is a traceparent's size: every version 00 traceparent is as
// long.
const placeholder = "00-00000000000000000000000000000000-0000000000000000-00"

// Reserve puts in annotations (allocated when nil) a context of the size
// Annotate will store for a span started under ctx (its traceparent, and
// the tracestate it inherits from ctx), so that an object's size can be
// checked before the span starts. Annotate replaces it.
func Reserve(ctx context.Context, annotations map[string]string) map[string]string {
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationTraceparent] = placeholder
	if ts := trace.SpanContextFromContext(ctx).TraceState().String(); ts != "" && len(ts) <= maxTracestate {
		annotations[AnnotationTracestate] = ts
	} else {
		delete(annotations, AnnotationTracestate)
	}
	return annotations
}

// FromAnnotations returns ctx carrying, as its remote parent, the span
// context the annotations hold; ctx unchanged when they hold none (or one
// that does not parse).
func FromAnnotations(ctx context.Context, annotations map[string]string) context.Context {
	tp := annotations[AnnotationTraceparent]
	if tp == "" {
		return ctx
	}
	return Propagator.Extract(ctx, propagation.MapCarrier{"traceparent": tp, "tracestate": annotations[AnnotationTracestate]})
}

// TraceID is the trace id the annotations hold, in hex; "" for none. It
// is read on every view of an action, so without the propagator's
// allocations: version 00's fields, checked as the propagator checks them.
func TraceID(annotations map[string]string) string {
	tp := annotations[AnnotationTraceparent]
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' || tp[:2] == "ff" {
		return ""
	}
	id := tp[3:35]
	if _, err := trace.TraceIDFromHex(id); err != nil {
		return "" // not hex, upper case, or all zeros
	}
	return id
}

// Env is the environment that carries ctx's span context into a process
// (TRACEPARENT, and TRACESTATE when there is one: OpenTelemetry's names
// for a context carried in the environment), or nil when ctx has none.
func Env(ctx context.Context) []string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	Propagator.Inject(ctx, c)
	if c["traceparent"] == "" {
		return nil
	}
	env := []string{"TRACEPARENT=" + c["traceparent"]}
	if ts := c["tracestate"]; ts != "" {
		env = append(env, "TRACESTATE="+ts)
	}
	return env
}

// Traceparent is the W3C traceparent of a span context.
func Traceparent(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// Scope names this server's spans' instrumentation scope.
const Scope = "taskactions"

// Start starts a span under ctx's span, from the provider that made that
// span, when it records; else it returns ctx and a span that does nothing,
// without allocating. Plugins use it: what they do is traced when their
// attempt is, and costs nothing when it is not.
func Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(Scope).Start(ctx, name, opts...)
}

// End ends a span with err as its status (nil: left unset, which is OK).
func End(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
