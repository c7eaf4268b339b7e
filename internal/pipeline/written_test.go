package pipeline

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// A read after this server's deletion waits for that object's own event,
// not for a version of the store that events of the kind may never reach;
// a delete that did not happen holds no read.
func TestCatchUpWaitsForDeletions(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs on the waiter before the read; event (if any) while
		// the read waits.
		before, event func(w *rvWaiter)
		// waits: the read waits at first; endsAtEvent: the event ends it.
		waits, endsAtEvent bool
	}{
		{name: "nothing deleted", before: func(*rvWaiter) {}},
		{name: "its deletion seen before the read", before: func(w *rvWaiter) {
			w.deletingObject("a")
			w.deletionDone("a", true)
			w.saw("a", 10, true, true)
		}},
		{name: "its deletion seen before its deleter recorded it", before: func(w *rvWaiter) {
			w.deletingObject("a")
			w.saw("a", 10, true, true)
		}, event: func(w *rvWaiter) { w.deletionDone("a", true) }, waits: true, endsAtEvent: true},
		{name: "a delete that did not happen", before: func(w *rvWaiter) {
			w.deletingObject("a")
			w.deletionDone("a", false)
		}},
		{name: "two deletes of it, the second finding it gone", before: func(w *rvWaiter) {
			w.deletingObject("a")
			w.deletingObject("a")
			w.deletionDone("a", true)
			w.deletionDone("a", false)
		}, event: func(w *rvWaiter) { w.saw("a", 10, true, true) }, waits: true, endsAtEvent: true},
		{name: "two deletes of it, the first failing", before: func(w *rvWaiter) {
			w.deletingObject("a")
			w.deletingObject("a")
			w.deletionDone("a", false)
			w.deletionDone("a", true)
		}, event: func(w *rvWaiter) { w.saw("a", 10, true, true) }, waits: true, endsAtEvent: true},
		{name: "its deletion seen during the read", before: func(w *rvWaiter) {
			w.deletingObject("a")
			w.deletionDone("a", true)
		}, event: func(w *rvWaiter) { w.saw("a", 10, true, true) }, waits: true, endsAtEvent: true},
		{name: "its deletion found by a re-list (its last version, behind seen)", before: func(w *rvWaiter) {
			w.saw("b", 20, true, false)
			w.deletingObject("a")
			w.deletionDone("a", true)
		}, event: func(w *rvWaiter) { w.saw("a", 10, true, true) }, waits: true, endsAtEvent: true},
		{name: "another object's event", before: func(w *rvWaiter) { w.deletingObject("a") },
			event: func(w *rvWaiter) { w.saw("b", 11, true, false) }, waits: true},
		{name: "an update of it that is no deletion", before: func(w *rvWaiter) { w.deletingObject("a") },
			event: func(w *rvWaiter) { w.saw("a", 11, true, false) }, waits: true},
		{name: "a deletion noted after the read began", before: func(w *rvWaiter) {
			w.deletingObject("a")
			w.deletionDone("a", true)
		},
			event: func(w *rvWaiter) {
				w.deletingObject("b")
				w.saw("a", 10, true, true)
			}, waits: true, endsAtEvent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &rvWaiter{}
			tc.before(w)
			done := make(chan struct{})
			go func() { w.catchUp(context.Background()); close(done) }()
			if !tc.waits {
				if !endsWithin(done, maxReadWait/2) {
					t.Fatal("the read waited with nothing to wait for")
				}
				return
			}
			if endsWithin(done, 100*time.Millisecond) {
				t.Fatal("the read did not wait for the deletion")
			}
			tc.event(w)
			if got := endsWithin(done, maxReadWait/2); got != tc.endsAtEvent {
				t.Fatalf("the read ended at the event: %v, want %v", got, tc.endsAtEvent)
			}
			<-done
		})
	}
}

func endsWithin(done <-chan struct{}, d time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// A deletion whose event never comes (the object went before, by another
// hand) lapses: the read waits at most maxReadWait, and the next one not
// at all.
func TestDeletionWaitLapses(t *testing.T) {
	w := &rvWaiter{}
	w.deletingObject("a")
	done := make(chan struct{})
	go func() { w.catchUp(context.Background()); close(done) }()
	if endsWithin(done, maxReadWait/2) {
		t.Fatal("the read did not wait for a deletion it had not seen")
	}
	<-done
	done = make(chan struct{})
	go func() { w.catchUp(context.Background()); close(done) }()
	if !endsWithin(done, maxReadWait/2) {
		t.Fatal("the next read waited for a lapsed deletion")
	}
}

// Through the cache's handler: an object a finalizer holds is taken as
// deleted once its update marks it so, and a deletion's event ends the
// wait of one deleted by name.
func TestDeletionEventsEndTheWait(t *testing.T) {
	var handled []watch.EventType
	c := New(testKind(&handled), zerologNop())
	for _, tc := range []struct {
		name  string
		event func(o obj)
	}{
		{"marked for deletion", func(o obj) {
			marked := o.DeepCopy()
			marked.ResourceVersion = "11"
			marked.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			c.Deliver(watch.Modified, o, marked)
		}},
		{"deleted", func(o obj) { c.Deliver(watch.Deleted, o, o) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := phased("p-"+tc.name, "RUNNING", "10")
			o.UID = types.UID(tc.name)
			c.Deliver(watch.Added, nil, o)
			done := c.Deleting(o)
			tc.event(o)
			done(true)
			read := make(chan struct{})
			go func() { c.CatchUp(context.Background()); close(read) }()
			if !endsWithin(read, maxReadWait/2) {
				t.Fatal("a read after the deletion's event still waited")
			}
		})
	}
}
