package pipeline

import "k8s.io/client-go/tools/cache"

// Deleted is the object of an informer's delete event as a T: the object
// itself, or the last state that a cache.DeletedFinalStateUnknown holds
// (the informer missed the deletion and learned of it from a re-list).
// It is false when the object is not a T.
func Deleted[T any](obj any) (T, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, ok := obj.(T)
	return t, ok
}
