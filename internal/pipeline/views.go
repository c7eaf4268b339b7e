package pipeline

import "sync"

// viewCache holds the latest view of each cached object, the one the
// informer handler built and published. Lists and snapshots take their
// views from it, so the view of an unchanged object is built once and its
// encodings (memoized on the view) are made once, however many lists and
// stream snapshots show it: a run of 10,000 actions costs a copy of
// encoded bytes per list, not 10,000 conversions and JSON encodings.
type viewCache[T Object, V any] struct {
	build func(T, bool) V

	mu sync.RWMutex
	m  map[objectKey]cachedView[V]
}

type objectKey struct{ namespace, name string }

type cachedView[V any] struct {
	uid, resourceVersion string
	view                 V
}

func newViewCache[T Object, V any](build func(T, bool) V) *viewCache[T, V] {
	return &viewCache[T, V]{build: build, m: map[objectKey]cachedView[V]{}}
}

// update is called by the informer handler for every event, with the view
// it built. It returns the view it replaces (ok false for a new object).
func (c *viewCache[T, V]) update(obj T, v V, deleted bool) (prev V, ok bool) {
	k := objectKey{obj.GetNamespace(), obj.GetName()}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[k]
	if deleted {
		delete(c.m, k)
	} else {
		c.m[k] = cachedView[V]{string(obj.GetUID()), obj.GetResourceVersion(), v}
	}
	return p.view, ok
}

// of returns the view of obj's current state: the cached one when it is of
// the same resource version, else (the indexer got obj before the handler
// did) one built now.
func (c *viewCache[T, V]) of(obj T) V {
	c.mu.RLock()
	e, ok := c.m[objectKey{obj.GetNamespace(), obj.GetName()}]
	c.mu.RUnlock()
	if ok && e.resourceVersion == obj.GetResourceVersion() && e.uid == string(obj.GetUID()) {
		return e.view
	}
	return c.build(obj, false)
}

func (c *viewCache[T, V]) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}
