// Package pipeline is the middle of the server for every resource kind:
// one shared informer, its indexes and sorted lists, each object's public
// view built (and encoded) once, a journal of the changes clients can see
// in resource-version order, and the subscriptions that read it. A kind
// plugs in by describing itself in a Kind; TaskActions, Stages, Freight
// and Promotions are four uses of the same Cache.
//
// Beside it: reads that wait for this server's own last write
// (written.go), readiness that fails while a watch keeps failing
// (health.go), the errors every manager returns (errors.go), and KeyQueue,
// the workqueue loop every controller over a cache shares (keyqueue.go).
package pipeline

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"taskactions/internal/journal"
)

// Object is a Kubernetes object held by pointer (*v1.TaskAction).
type Object interface {
	comparable
	runtime.Object
	metav1.Object
}

// Kind says how the objects of one resource kind flow through the
// pipeline. Everything but Name, ListWatch, Example and View is optional.
type Kind[T Object, V any] struct {
	// Name is the kind, for logs and metrics ("TaskAction").
	Name string
	// ListWatch lists and watches every object of the kind.
	ListWatch cache.ListerWatcher
	// Example is an empty object of the kind, for the informer.
	Example T
	// Indexers are the informer's indexes.
	Indexers cache.Indexers
	// Compact, if set, may shrink an object on its way into the cache (it
	// is the informer's own copy, not yet shared): the cache holds every
	// live object for as long as it lives.
	Compact func(T)

	// Lists names the sorted lists an object belongs to, each as an
	// informer index and a key of it (see ListKey). Lists are built once,
	// when first asked for, and then patched by events.
	Lists func(T) []string
	// Compare orders lists; it must be total. Sort, if set, sorts a new
	// list faster than slices.SortFunc with Compare would.
	Compare func(a, b T) int
	Sort    func([]T)

	// View builds what clients see of an object; deleted marks the last
	// view of one that is gone. Views are shared and must be read-only.
	View func(obj T, deleted bool) V
	// Same reports whether two views of an object show clients the same
	// thing, so that a write nobody can see (a finalizer, a label only
	// this server reads) is no event. Nil: every change is an event.
	Same func(a, b V) bool
	// Brief, when set, is what a stream's filter reads of an object's
	// previous view, which each event keeps beside the new one
	// (journal.Entry.Prev): kept small, so that the replay journal does not
	// hold on to every object's whole previous view. Nil: the whole view.
	Brief func(V) V
	// Topics are the subscription topics an event about obj goes to.
	Topics func(obj T, view V) []string

	// Handle, if set, sees every event after it is published, on the
	// informer's goroutine and in resource-version order. It must not
	// block for long: hand slow work to a queue.
	Handle func(Event[T, V])

	Journal journal.Config
}

// Event is one informer event, as Kind.Handle sees it.
type Event[T Object, V any] struct {
	Type watch.EventType
	// Old is the state the event replaces: zero for an add, the object
	// itself for a delete.
	Old    T
	Object T
	View   V
	// Initial marks the adds of the first list, before the cache synced.
	Initial bool
}

// ListKey names the list of an index key, for Kind.Lists.
func ListKey(index, key string) string { return index + "|" + key }
