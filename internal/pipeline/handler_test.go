package pipeline

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"taskactions/internal/journal"
)

// view is a test kind's view: the object's "phase" label.
type view struct {
	phase   string
	deleted bool
}

func testKind(handled *[]watch.EventType) Kind[obj, *view] {
	return Kind[obj, *view]{
		Name:    "Test",
		Example: &metav1.PartialObjectMetadata{},
		View:    func(o obj, deleted bool) *view { return &view{o.Labels["phase"], deleted} },
		Same:    func(a, b *view) bool { return *a == *b },
		Topics:  func(o obj, _ *view) []string { return []string{"run/" + o.Labels["run"]} },
		Handle:  func(ev Event[obj, *view]) { *handled = append(*handled, ev.Type) },
	}
}

func phased(name, phase, rv string) obj {
	o := listObj("r", name, 0, rv)
	o.Labels["phase"] = phase
	return o
}

// TestDeliverPublishesVisibleChanges: an event is published to its
// topics when its view changes, not when only the resource version does;
// the kind sees every event either way, and a delete is published.
func TestDeliverPublishesVisibleChanges(t *testing.T) {
	var handled []watch.EventType
	c := New(testKind(&handled), zerologNop())
	c.journal.SetFloor(1)
	sub, _ := c.journal.Subscribe("run/r", ptr.To[uint64](1), func() uint64 { return 1 })
	defer sub.Close()

	a1, a2, a3 := phased("a", "QUEUED", "2"), phased("a", "QUEUED", "3"), phased("a", "RUNNING", "4")
	c.Deliver(watch.Added, nil, a1)
	c.Deliver(watch.Modified, a1, a2) // only the resource version changed
	c.Deliver(watch.Modified, a2, a3)
	c.Deliver(watch.Deleted, a3, a3)

	var got []journal.Entry[*view]
	got, _ = sub.Drain(got)
	var cursors []uint64
	for _, e := range got {
		cursors = append(cursors, e.Cursor)
	}
	// The mailbox coalesces by object: the delete (cursor 4) is what is
	// pending, and it says so.
	if len(got) != 1 || !got[0].Value.deleted || got[0].Value.phase != "RUNNING" {
		t.Fatalf("pending events %v (%+v), want the delete at cursor 4", cursors, got)
	}
	if c.Published() != 3 {
		t.Errorf("published %d events, want 3 (add, phase change, delete)", c.Published())
	}
	if len(handled) != 4 {
		t.Errorf("the kind saw %d events, want all 4", len(handled))
	}
}

// TestViewsAreBuiltOnce: the view of a cached object is the one its event
// built, for as long as its resource version is current.
func TestViewsAreBuiltOnce(t *testing.T) {
	var handled []watch.EventType
	c := New(testKind(&handled), zerologNop())
	a1 := phased("a", "QUEUED", "2")
	c.Deliver(watch.Added, nil, a1)
	if v1, v2 := c.View(a1), c.View(a1); v1 != v2 {
		t.Error("two views built for one resource version")
	}
	a2 := phased("a", "RUNNING", "3") // the indexer has it, the handler not yet
	if v := c.View(a2); v.phase != "RUNNING" {
		t.Errorf("view of a newer object = %+v, want it built fresh", v)
	}
}
