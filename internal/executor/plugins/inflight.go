package plugins

import (
	"context"
	"strconv"
	"sync"
)

// Inflight is the attempts whose work a plugin has under way, each with
// the cancel of its context, so that the plugin's Abort stops the work of
// the attempt it is asked to (a request, a step, a measurement) and of no
// other. The zero value is ready; it is safe for concurrent use.
type Inflight struct {
	mu     sync.Mutex
	cancel map[string]context.CancelFunc
}

// AttemptKey names an attempt of an action among all the executor runs.
func AttemptKey(tc *TaskContext) string { return tc.UID + "/" + strconv.Itoa(int(tc.Attempt)) }

// Start returns the context of the attempt's work, cancelled by Abort,
// and the function that ends it, which the caller must call when the
// work returns.
func (f *Inflight) Start(ctx context.Context, tc *TaskContext) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	k := AttemptKey(tc)
	f.mu.Lock()
	if f.cancel == nil {
		f.cancel = map[string]context.CancelFunc{}
	}
	f.cancel[k] = cancel
	f.mu.Unlock()
	return ctx, func() {
		cancel()
		f.mu.Lock()
		delete(f.cancel, k)
		f.mu.Unlock()
	}
}

// Abort cancels the attempt's work, if any is under way.
func (f *Inflight) Abort(tc *TaskContext) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cancel := f.cancel[AttemptKey(tc)]; cancel != nil {
		cancel()
	}
}
