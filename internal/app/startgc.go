package app

import (
	"context"
	"runtime/debug"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// startDrainTimeout bounds the wait for a start's work to drain: a server
// busy from its first second, or one whose executor stands by for another
// replica's lease, still gives its start's garbage back.
const startDrainTimeout = 30 * time.Second

// releaseStartMemory hands the garbage of a start back to the system once
// the start's work is over. A start lists every live object, and decoding
// it (in the embedded API server, twice, and in the informer) makes
// garbage many times the object's size; left alone, the runtime keeps
// those pages for a long while. Ready comes when the caches are synced,
// but the run service's workers and the executor then go through every
// listed object once more: a collection at ready, before they end, left
// 6–13 MB of their garbage resident at 10,000 live actions, more or less
// from one start to the next. So it waits until drained reports them done.
//
// The collector keeps its default setting during the start. Relaxing it
// (GOGC 400 while the caches filled) saved a tenth of a restart's CPU, but
// interleaved the long-lived objects with more garbage, so the heap ended
// fragmented: with 10,000 live actions, 20 MiB more resident for the
// server's whole life against 0.3 s more to be ready (2.5 → 2.8 s).
func releaseStartMemory(ctx context.Context, drained func() bool) {
	go func() {
		_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, startDrainTimeout, true,
			func(context.Context) (bool, error) { return drained(), nil })
		if ctx.Err() != nil {
			return // stopped: nothing to give back
		}
		debug.FreeOSMemory()
	}()
}

// startDrained reports whether the work a start hands to the run service's
// workers and to the executor is done.
func (a *App) startDrained() bool {
	return a.notifier.QueueDepth() == 0 && (a.executor == nil || a.executor.Drained())
}
