package app

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"taskactions/internal/tracing"
)

// startTracing sets up the trace exporter (when the configuration turns it
// on), before any part that makes spans starts.
func (a *App) startTracing(ctx context.Context) error {
	tp, stop, err := tracing.Setup(ctx, a.cfg.Tracing, a.component("tracing"))
	if err != nil {
		return err
	}
	a.tracer, a.stopTracer = tp, stop
	return nil
}

// tracingFlushTimeout bounds the last export at a stop.
const tracingFlushTimeout = 5 * time.Second

// stopTracing flushes the spans not sent yet and stops the exporter, once
// every other part has stopped. A collector that cannot take them (down,
// slow) costs the spans, logged, but does not fail the stop: the server's
// work is done, and a stop that exits 1 for want of a collector would
// look, to whoever runs it, like the server's failure.
func (a *App) stopTracing() error {
	if a.stopTracer == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	if err := a.stopTracer(ctx); err != nil {
		a.log.Warn().Err(err).Msg("tracing: the last spans could not be exported at the stop")
	}
	return nil
}

// tracerOf is the tracer of this server's own spans; nil when tracing is
// off, which the parts take as "make no span".
func (a *App) tracerOf() trace.Tracer {
	if a.tracer == nil {
		return nil
	}
	return a.tracer.Tracer(tracing.Scope)
}
