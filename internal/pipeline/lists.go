package pipeline

import (
	"slices"
	"sync"
)

// listCache keeps sorted index lists (a run's actions, a project's
// Stages) and patches them with each event, so a list of 10,000 objects
// is sorted once, when first asked for, and not again on every status
// change. Each entry holds the object's view beside it: a list of views
// is then a copy, not 10,000 lookups in the view cache.
//
// Each key has a generation, bumped by every event for it. A list built
// from the indexer is kept only if no event for its key arrived while it
// was built; from then on the events keep it current.
type listCache[T Object, V any] struct {
	keysOf  func(T) []string
	compare func(a, b T) int
	sort    func([]T)

	mu    sync.Mutex
	gen   uint64
	keys  map[string]uint64 // list key -> generation of its last change
	lists map[string]*cachedList[T, V]
}

type cachedList[T Object, V any] struct {
	gen     uint64
	entries []listed[T, V] // sorted by compare on obj
}

// listed is an object of a list and its view.
type listed[T Object, V any] struct {
	obj  T
	view V
}

func newListCache[T Object, V any](keysOf func(T) []string, compare func(a, b T) int, sortFn func([]T)) *listCache[T, V] {
	if keysOf == nil {
		keysOf = func(T) []string { return nil }
	}
	if sortFn == nil {
		sortFn = func(s []T) { slices.SortFunc(s, compare) }
	}
	return &listCache[T, V]{keysOf: keysOf, compare: compare, sort: sortFn,
		keys: map[string]uint64{}, lists: map[string]*cachedList[T, V]{}}
}

// update is called by the informer handler for every event, after the
// indexer has it: old is the previous state (zero for an add), obj the new
// one (zero for a delete) and v its view. Removing old and inserting obj
// is idempotent, so a list built from an indexer that already held obj
// stays right.
func (c *listCache[T, V]) update(old, obj T, v V) {
	var zero T
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if old != zero {
		for _, k := range c.keysOf(old) {
			c.keys[k] = c.gen
			if l := c.lists[k]; l != nil {
				l.remove(old, c.compare)
				l.gen = c.gen
				if len(l.entries) == 0 && obj == zero {
					delete(c.lists, k) // the run or project is gone
				}
			}
		}
	}
	if obj != zero {
		for _, k := range c.keysOf(obj) {
			c.keys[k] = c.gen
			if l := c.lists[k]; l != nil {
				l.insert(listed[T, V]{obj, v}, c.compare)
				l.gen = c.gen
			}
		}
	}
}

// objects returns a copy of the list of key, building it when it is not
// cached: build lists the objects, viewOf gives an object's view.
func (c *listCache[T, V]) objects(key string, build func() ([]T, error), viewOf func(T) V) ([]T, error) {
	return copyList(c, key, build, viewOf, func(e listed[T, V]) T { return e.obj })
}

// views is objects, but the objects' views.
func (c *listCache[T, V]) views(key string, build func() ([]T, error), viewOf func(T) V) ([]V, error) {
	return copyList(c, key, build, viewOf, func(e listed[T, V]) V { return e.view })
}

// copyList copies out what pick takes of each entry of the list of key.
func copyList[T Object, V, R any](c *listCache[T, V], key string, build func() ([]T, error), viewOf func(T) V, pick func(listed[T, V]) R) ([]R, error) {
	var out []R
	err := c.with(key, build, viewOf, func(es []listed[T, V]) {
		out = make([]R, len(es))
		for i, e := range es {
			out[i] = pick(e)
		}
	})
	return out, err
}

// with calls read with the list of key under the lock (read copies out
// what it needs), building the list when it is not cached. The generation
// is read before building: the indexer has every change up to it, so the
// list is at least that fresh, and if an event came in meanwhile the list
// is not kept (that event was not applied to it).
func (c *listCache[T, V]) with(key string, build func() ([]T, error), viewOf func(T) V, read func([]listed[T, V])) error {
	c.mu.Lock()
	gen := c.keys[key]
	if l := c.lists[key]; l != nil && l.gen == gen {
		defer c.mu.Unlock()
		read(l.entries)
		return nil
	}
	c.mu.Unlock()
	objs, err := build()
	if err != nil {
		return err
	}
	c.sort(objs)
	entries := make([]listed[T, V], len(objs))
	for i, o := range objs {
		entries[i] = listed[T, V]{o, viewOf(o)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys[key] == gen {
		c.lists[key] = &cachedList[T, V]{gen: gen, entries: entries}
	}
	read(entries)
	return nil
}

// forget drops everything (the informer stopped).
func (c *listCache[T, V]) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.keys)
	clear(c.lists)
}

// remove takes out the entry for the same object as obj, if present.
func (l *cachedList[T, V]) remove(obj T, compare func(a, b T) int) {
	if i, found := l.search(obj, compare); found {
		l.entries = slices.Delete(l.entries, i, i+1)
	}
}

// insert puts e at its place, replacing an entry for the same object.
func (l *cachedList[T, V]) insert(e listed[T, V], compare func(a, b T) int) {
	if i, found := l.search(e.obj, compare); found {
		l.entries[i] = e
	} else {
		l.entries = slices.Insert(l.entries, i, e)
	}
}

func (l *cachedList[T, V]) search(obj T, compare func(a, b T) int) (int, bool) {
	return slices.BinarySearchFunc(l.entries, obj, func(e listed[T, V], o T) int { return compare(e.obj, o) })
}
