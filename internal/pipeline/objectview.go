package pipeline

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"taskactions/internal/journal"
)

// ObjectView is the view of a kind served as the Kubernetes object it is
// (Kargo's Stages, Freight and Promotions): the object with its apiVersion
// and kind, which typed clients drop on decoding and kubectl shows, and
// without managed fields; and whether it was deleted. One value is shared
// by every list, snapshot and subscriber: treat it as read-only.
type ObjectView[T Object] struct {
	Object  T
	Deleted bool
	// JSON memoizes the encoding of the object, Wire that of its stream
	// event, so each is made once.
	JSON journal.Encoded
	Wire journal.Encoded
}

// ObjectViews is a Kind.View for objects of gvk. It copies the object
// (shallowly: the cache's copy is never changed) to set what clients see.
func ObjectViews[P any, T interface {
	*P
	Object
}](gvk schema.GroupVersionKind) func(T, bool) *ObjectView[T] {
	return func(obj T, deleted bool) *ObjectView[T] {
		c := *obj
		var view T = &c
		view.GetObjectKind().SetGroupVersionKind(gvk)
		view.SetManagedFields(nil) // a write's answer has them; the cache drops them
		return &ObjectView[T]{Object: view, Deleted: deleted}
	}
}

// SameObject is a Kind.Same for object views: the same incarnation at
// the same version, deleted or not. (An informer re-list delivers objects
// it has already seen; they are no events.)
func SameObject[T Object](a, b *ObjectView[T]) bool {
	return a.Deleted == b.Deleted && a.Object.GetUID() == b.Object.GetUID() &&
		a.Object.GetResourceVersion() == b.Object.GetResourceVersion()
}
