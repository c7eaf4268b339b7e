package pipeline

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// TestWatchHealthFollowsTheLastCall: the cache is healthy once a watch
// opens; a refused watch makes it unhealthy until a later watch opens (a
// list in between does not); calls ended by their own context do not
// count.
func TestWatchHealthFollowsTheLastCall(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "flyte.org", Resource: "taskactions"}, "", errors.New("no watch"))
	var watchErr error
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &metav1.List{}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			if watchErr != nil {
				return nil, watchErr
			}
			return watch.NewFake(), nil
		},
	}
	var h watchHealth
	w := cache.ToListerWatcherWithContext(h.wrap(lw))
	ctx := t.Context()
	list := func() error { _, err := w.ListWithContext(ctx, metav1.ListOptions{}); return err }
	steps := []struct {
		name    string
		call    func() error
		healthy bool
	}{
		{"list works, no watch yet", list, false},
		{"watch opens", func() error { _, err := w.WatchWithContext(ctx, metav1.ListOptions{}); return err }, true},
		{"watch forbidden", func() error {
			watchErr = forbidden
			_, err := w.WatchWithContext(ctx, metav1.ListOptions{})
			return err
		}, false},
		{"watch fails as the caller stops", func() error {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			watchErr = context.Canceled
			_, err := w.WatchWithContext(cctx, metav1.ListOptions{})
			return err
		}, false},
		{"list works between refused watches", list, false},
		{"watch works again", func() error { watchErr = nil; _, err := w.WatchWithContext(ctx, metav1.ListOptions{}); return err }, true},
	}
	for _, s := range steps {
		_ = s.call()
		if got := h.err(); (got == nil) != s.healthy {
			t.Fatalf("after %q: err = %v, want healthy %v", s.name, got, s.healthy)
		}
	}
	watchErr = forbidden
	_, _ = w.WatchWithContext(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(h.err()) {
		t.Fatalf("err = %v, want the forbidden error wrapped", h.err())
	}
}
