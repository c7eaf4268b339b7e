package executor

import (
	"context"
	"errors"
	"sync"

	v1 "taskactions/api/v1"
)

// rounds are the plugin rounds in progress, by action key, so that an
// abort can end one. A plugin may do its work within its round (http
// waiting for its answer, a Kargo step's git), and the workqueue runs no
// second round of an action, which would see the abort, until the first
// returns: without this, an abort waited for the work to finish.
//
// Ending a round cancels its context only: the plugin returns as
// interrupted, and the next round finds the action deleted and aborts the
// attempt as any abort does (Controller.finish).
type rounds struct {
	mu     sync.Mutex
	cancel map[string]context.CancelCauseFunc
}

// errAbortedMidRound is the cause of a round's context ended by an abort.
var errAbortedMidRound = errors.New("the action was aborted")

// start gives the round of key a context that seen cancels; done, called
// once the round has returned, forgets it.
func (r *rounds) start(ctx context.Context, key string) (_ context.Context, done func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	if r.cancel == nil {
		r.cancel = map[string]context.CancelCauseFunc{}
	}
	r.cancel[key] = cancel
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.cancel, key)
		r.mu.Unlock()
		cancel(nil)
	}
}

// seen ends the round in progress of an action being deleted (aborted),
// or gone; obj is what the informer delivered.
func (r *rounds) seen(key string, obj any) {
	if ta, ok := obj.(*v1.TaskAction); ok && ta.DeletionTimestamp == nil {
		return
	}
	r.mu.Lock()
	cancel := r.cancel[key]
	r.mu.Unlock()
	if cancel != nil {
		cancel(errAbortedMidRound)
	}
}
