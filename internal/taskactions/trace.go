package taskactions

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	v1 "taskactions/api/v1"
	"taskactions/internal/tracing"
)

// traceParent is the context an enqueue's span starts in, when tracing
// is on (Config.Tracer). The enqueue's span context is the action's:
// stored on the object (tracing.AnnotationTraceparent), it is where the
// executor puts the action's attempts and the enqueues of its children,
// whichever replica runs them, and after a restart. So a run is one trace,
// rooted at the request that enqueued its root action:
//
//   - a root action's span is a child of ctx's (the request's);
//   - a child's is a child of its parent action's span, unless the
//     request already belongs to that trace (a task that sent its
//     TRACEPARENT on, as traceparent): then of the request's, which sits
//     under the attempt that enqueued it. A request of another trace (a
//     client that knows nothing of the run) stays a trace of its own.
//
// With tracing off nothing is stored, and a child keeps the context it
// copied from its parent's annotations (build): an executor that traces
// still puts its attempts in the run's trace, under the parent's enqueue.
func (m *Manager) traceParent(ctx context.Context, parent *v1.TaskAction) context.Context {
	if m.cfg.Tracer == nil || parent == nil {
		return ctx
	}
	run := tracing.FromAnnotations(ctx, parent.Annotations)
	if sc := trace.SpanContextFromContext(run); sc.IsValid() && sc.TraceID() != trace.SpanContextFromContext(ctx).TraceID() {
		return run
	}
	return ctx
}

// startEnqueue starts the span of an enqueue that will create (a repeat
// found in the cache makes none), under traceParent's context.
func (m *Manager) startEnqueue(ctx context.Context, req EnqueueRequest) (context.Context, trace.Span) {
	id := req.ID
	return m.cfg.Tracer.Start(ctx, "enqueue "+req.TaskType, trace.WithAttributes(
		attribute.String("taskactions.project", id.Project), attribute.String("taskactions.domain", id.Domain),
		attribute.String("taskactions.run", id.Run), attribute.String("taskactions.action", id.Name),
		attribute.String("taskactions.parent", req.Parent), attribute.String("taskactions.task_type", req.TaskType),
	))
}

// endEnqueue ends an enqueue's span: created, found (a repeat), or failed.
func endEnqueue(span trace.Span, created bool, err error) {
	span.SetAttributes(attribute.Bool("taskactions.created", created))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
