package executor

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	v1 "taskactions/api/v1"
	"taskactions/internal/tracing"
)

// An attempt's span covers the attempt, from the round that starts it to
// the write that ends it, over as many rounds as it takes. Its parent is
// the action's context, stored on the object at its enqueue
// (tracing.AnnotationTraceparent), so the attempts of a run are in the
// run's trace whichever replica runs them; the plugin's spans (a process,
// a request, a Kargo step) are its children, through the round's context.
//
// A span lives in memory while its attempt runs here (one per action in
// flight, like Controller.started): an attempt this process resumes (a
// sleep after a restart, an attempt a dead server lost) gets a span
// started when the attempt started, as its phase history says, so no
// attempt is missing from the trace, and one whose server died with it
// is not exported by that server but by the next, ended as lost. With
// tracing off (Config.Tracer nil) none of this runs.

// attemptSpan is the span of the attempt in flight of one action.
type attemptSpan struct {
	uid     string
	attempt uint32
	span    trace.Span
}

// traceAttempt returns ctx with the span of ta's current attempt, started
// now if this process has none for it.
func (c *Controller) traceAttempt(ctx context.Context, key string, ta *v1.TaskAction) context.Context {
	if c.cfg.Tracer == nil {
		return ctx
	}
	uid, attempt := string(ta.UID), max(ta.Status.Attempts, 1)
	c.spanMu.Lock()
	defer c.spanMu.Unlock()
	if s := c.spans[key]; s != nil {
		if s.uid == uid && s.attempt == attempt {
			return trace.ContextWithSpan(ctx, s.span)
		}
		// An attempt whose end this process did not write (another
		// incarnation of the name, a write that moved): over all the same.
		s.span.SetStatus(codes.Error, "ended without this executor's write")
		s.span.End()
	}
	s := &attemptSpan{uid: uid, attempt: attempt}
	sp := &ta.Spec
	_, s.span = c.cfg.Tracer.Start(tracing.FromAnnotations(ctx, ta.Annotations), "attempt "+sp.TaskType,
		trace.WithTimestamp(c.attemptStart(ta)),
		trace.WithAttributes(
			attribute.String("taskactions.project", sp.Project), attribute.String("taskactions.domain", sp.Domain),
			attribute.String("taskactions.run", sp.RunName), attribute.String("taskactions.action", sp.ActionName),
			attribute.String("taskactions.task_type", sp.TaskType), attribute.Int("taskactions.attempt", int(attempt)),
			attribute.Bool("taskactions.resumed", !attemptStarting(ta)),
		))
	if c.spans == nil {
		c.spans = map[string]*attemptSpan{}
	}
	c.spans[key] = s
	return trace.ContextWithSpan(ctx, s.span)
}

// attemptStart is when the current attempt started: now for one this
// round starts, else as this process noted it, else its last Initializing
// in the phase history (whole seconds), else now.
func (c *Controller) attemptStart(ta *v1.TaskAction) time.Time {
	if attemptStarting(ta) {
		return time.Now()
	}
	if start, ok := c.started.Load(attemptKey(ta)); ok {
		return start.(time.Time)
	}
	h := ta.Status.PhaseHistory
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Phase == v1.ReasonInitializing {
			return h[i].OccurredAt.Time
		}
	}
	return time.Now()
}

// endAttemptSpan ends the span of key's attempt, if one is open, with the
// attempt's outcome (an executor outcome, or "aborted", "deleted",
// "interrupted", "ended"); msg is the failure's message ("" for none).
func (c *Controller) endAttemptSpan(key, outcome, msg string) {
	if c.cfg.Tracer == nil {
		return
	}
	c.spanMu.Lock()
	s := c.spans[key]
	delete(c.spans, key)
	c.spanMu.Unlock()
	if s == nil {
		return
	}
	s.span.SetAttributes(attribute.String("taskactions.outcome", outcome))
	switch outcome {
	case outcomeSucceeded, outcomeCacheHit:
		s.span.SetStatus(codes.Ok, "")
	case "ended": // by another's write: how is not this executor's to say
	default:
		s.span.SetStatus(codes.Error, outcome+spaced(msg))
	}
	s.span.End()
}

// endAttemptSpans ends every span still open, when the executor stops:
// their attempts were cut short by the stop (and start over at the next).
func (c *Controller) endAttemptSpans() {
	c.spanMu.Lock()
	keys := make([]string, 0, len(c.spans))
	for k := range c.spans {
		keys = append(keys, k)
	}
	c.spanMu.Unlock()
	for _, k := range keys {
		c.endAttemptSpan(k, "interrupted", "by a server stop")
	}
}

func spaced(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
