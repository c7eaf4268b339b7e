package pipeline

import (
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"taskactions/internal/journal"
)

// handler adapts informer callbacks to handle. A re-list that finds an
// object unchanged is no event.
func (c *Cache[T, V]) handler() cache.ResourceEventHandler {
	var zero T
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			c.handle(watch.Added, zero, obj.(T), initial)
		},
		UpdateFunc: func(oldObj, obj any) {
			old, o := oldObj.(T), obj.(T)
			if old.GetResourceVersion() == o.GetResourceVersion() {
				return
			}
			c.handle(watch.Modified, old, o, false)
		},
		DeleteFunc: func(obj any) {
			if o, ok := Deleted[T](obj); ok {
				c.handle(watch.Deleted, o, o, false)
			}
		},
	}
}

// Deliver feeds an event to the pipeline as the informer does (old is
// zero for an add, obj itself for a delete). The informer is its only
// caller but for benchmarks, which measure a kind's pipeline without an
// API server.
func (c *Cache[T, V]) Deliver(typ watch.EventType, old, obj T) { c.handle(typ, old, obj, false) }

// handle is called on the informer's goroutine, in resource-version order.
// It patches the lists and the views, and publishes the event to the
// journal (here, because stream cursors need this global order), then
// gives it to the kind.
func (c *Cache[T, V]) handle(typ watch.EventType, old, obj T, initial bool) {
	var zero T
	deleted := typ == watch.Deleted
	v := c.kind.View(obj, deleted)
	if deleted {
		c.lists.update(old, zero, v)
	} else {
		c.lists.update(old, obj, v)
	}
	prev, had := c.views.update(obj, v, deleted)
	rv := parseRV(obj.GetResourceVersion())
	// The initial list is the state before the journal's floor, not events
	// after it: snapshots serve it.
	if !initial {
		if !had || c.kind.Same == nil || !c.kind.Same(prev, v) {
			if had && c.kind.Brief != nil {
				prev = c.kind.Brief(prev)
			}
			c.journal.Publish(journal.Entry[V]{
				Cursor: rv, Key: obj.GetNamespace() + "/" + obj.GetName(),
				Topics: c.kind.Topics(obj, v), Value: v, Prev: prev, HasPrev: had,
			})
			c.published.Add(1)
		}
	}
	c.written.saw(string(obj.GetUID()), rv, !initial, deleted || obj.GetDeletionTimestamp() != nil)
	if c.kind.Handle != nil {
		c.kind.Handle(Event[T, V]{Type: typ, Old: old, Object: obj, View: v, Initial: initial})
	}
}
