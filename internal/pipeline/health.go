package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// watchHealth follows the informer's list and watch calls. A synced cache
// whose watch keeps failing (the watch verb not granted, the API server
// gone) serves reads that silently stop changing; readiness says so
// instead. Only a watch that opens makes the cache healthy: a list works
// between two refused watches, and must not make it look healthy.
type watchHealth struct {
	last atomic.Pointer[callError] // nil: nothing failed since the last watch opened
	open atomic.Bool               // a watch has opened since the cache started
}

type callError struct {
	op  string
	err error
}

func (h *watchHealth) reset() {
	h.last.Store(nil)
	h.open.Store(false)
}

func (h *watchHealth) record(op string, err error) {
	switch {
	case err != nil:
		h.last.Store(&callError{op, fmt.Errorf("%s: %w", op, err)})
		if op == "watch" {
			h.open.Store(false)
		}
	case op == "watch":
		h.last.Store(nil)
		h.open.Store(true)
	default: // a list that works clears only a list's error
		if e := h.last.Load(); e != nil && e.op == "list" {
			h.last.CompareAndSwap(e, nil)
		}
	}
}

// err says why the cache does not follow changes, nil when it does.
func (h *watchHealth) err() error {
	if e := h.last.Load(); e != nil {
		return e.err
	}
	if !h.open.Load() {
		return errNoWatchYet
	}
	return nil
}

var errNoWatchYet = errors.New("no watch open yet")

// wrap returns lw with every list and watch call's outcome recorded.
func (h *watchHealth) wrap(lw cache.ListerWatcher) cache.ListerWatcher {
	return &healthListerWatcher{inner: lw, ctx: cache.ToListerWatcherWithContext(lw), health: h}
}

type healthListerWatcher struct {
	inner  cache.ListerWatcher
	ctx    cache.ListerWatcherWithContext
	health *watchHealth
}

func (l *healthListerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), options)
}

func (l *healthListerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), options)
}

func (l *healthListerWatcher) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	obj, err := l.ctx.ListWithContext(ctx, options)
	if ctx.Err() == nil {
		l.health.record("list", err)
	}
	return obj, err
}

func (l *healthListerWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	w, err := l.ctx.WatchWithContext(ctx, options)
	if ctx.Err() == nil {
		l.health.record("watch", err)
	}
	return w, err
}

// IsWatchListSemanticsUnSupported passes on what the wrapped client says,
// which the reflector asks before streaming its initial list.
func (l *healthListerWatcher) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(l.inner)
}
