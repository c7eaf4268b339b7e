package sse

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// quietLog has some bytes and never grows or ends.
type quietLog struct{ changed chan struct{} }

func (l quietLog) Changed() <-chan struct{} { return l.changed }
func (quietLog) ReadAt(p []byte, off int64) (int, error) {
	text := "hello\n"
	if off >= int64(len(text)) {
		return 0, io.EOF
	}
	n := copy(p, text[off:])
	return n, io.EOF
}
func (quietLog) Ended() (bool, int64) { return false, 0 }

// A tail that follows a log ends its request's span once it sent what the
// log held, not when it ends: a tail can follow for hours.
func TestTailEndsItsRequestSpanOnceItCaughtUp(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, span := tp.Tracer("test").Start(context.Background(), "GET /logs")
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Tail(ctx, httptest.NewRecorder(), "", quietLog{changed: make(chan struct{})}, Config{Heartbeat: time.Hour})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.Ended()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("the tail ended")
	default:
	}
	if len(rec.Ended()) != 1 || span.IsRecording() {
		t.Errorf("the request's span is still open while the tail follows")
	}
	cancel()
	<-done
}
