package plugins

import (
	"context"
	"testing"
)

// An abort stops the work of the attempt it names, and of no other
// attempt of the same action or of another action.
func TestInflightAbortsOnlyItsAttempt(t *testing.T) {
	var f Inflight
	a1 := &TaskContext{UID: "a", Attempt: 1}
	a2 := &TaskContext{UID: "a", Attempt: 2}
	b1 := &TaskContext{UID: "b", Attempt: 1}
	ctxA1, doneA1 := f.Start(context.Background(), a1)
	ctxA2, doneA2 := f.Start(context.Background(), a2)
	ctxB1, doneB1 := f.Start(context.Background(), b1)
	defer doneA2()
	defer doneB1()

	f.Abort(a1)
	if ctxA1.Err() == nil {
		t.Error("the aborted attempt's work goes on")
	}
	if ctxA2.Err() != nil || ctxB1.Err() != nil {
		t.Error("an abort stopped another attempt's work")
	}
	doneA1()
	f.Abort(a1) // ended: nothing to stop
	f.Abort(&TaskContext{UID: "c", Attempt: 1})
	if ctxA2.Err() != nil || ctxB1.Err() != nil {
		t.Error("an abort of no work under way stopped another attempt's work")
	}
}

// The end of the work releases its context, aborted or not.
func TestInflightDoneCancels(t *testing.T) {
	var f Inflight
	ctx, done := f.Start(context.Background(), &TaskContext{UID: "a", Attempt: 1})
	done()
	if ctx.Err() == nil {
		t.Error("the context of ended work is not released")
	}
	if len(f.cancel) != 0 {
		t.Errorf("ended work is still tracked: %v", f.cancel)
	}
}
