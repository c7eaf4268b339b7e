package executor

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
)

// An event of the action being deleted, or gone, ends its round in
// progress; any other event, or one of another action, does not; a round
// that has returned is forgotten.
func TestRoundsEndOnAbort(t *testing.T) {
	live := &v1.TaskAction{}
	deleting := &v1.TaskAction{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}}
	tests := []struct {
		name  string
		key   string
		obj   any
		ended bool
	}{
		{"an update", "ns/a", live, false},
		{"deleted, held by its finalizer", "ns/a", deleting, true},
		{"gone", "ns/a", cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: live}, true},
		{"another action deleted", "ns/b", deleting, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r rounds
			ctx, done := r.start(context.Background(), "ns/a")
			r.seen(tc.key, tc.obj)
			if ended := ctx.Err() != nil; ended != tc.ended {
				t.Fatalf("round ended %v, want %v", ended, tc.ended)
			}
			if tc.ended && !errors.Is(context.Cause(ctx), errAbortedMidRound) {
				t.Errorf("cause %v", context.Cause(ctx))
			}
			done()
			r.seen("ns/a", deleting) // after the round: nothing to end
			if len(r.cancel) != 0 {
				t.Errorf("%d rounds kept after done", len(r.cancel))
			}
		})
	}
}
