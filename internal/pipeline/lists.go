package pipeline

import (
	"slices"
	"sync"
)

// listCache keeps sorted index lists (a run's actions, a project's
// Stages) and patches them with each event, so a list of 10,000 objects
// is sorted once, when first asked for, and not again on every status
// change.
//
// Each key has a generation, bumped by every event for it. A list built
// from the indexer is kept only if no event for its key arrived while it
// was built; from then on the events keep it current.
type listCache[T Object] struct {
	keysOf  func(T) []string
	compare func(a, b T) int
	sort    func([]T)

	mu    sync.Mutex
	gen   uint64
	keys  map[string]uint64 // list key -> generation of its last change
	lists map[string]*cachedList[T]
}

type cachedList[T Object] struct {
	gen  uint64
	objs []T // sorted by compare
}

func newListCache[T Object](keysOf func(T) []string, compare func(a, b T) int, sortFn func([]T)) *listCache[T] {
	if keysOf == nil {
		keysOf = func(T) []string { return nil }
	}
	if sortFn == nil {
		sortFn = func(s []T) { slices.SortFunc(s, compare) }
	}
	return &listCache[T]{keysOf: keysOf, compare: compare, sort: sortFn,
		keys: map[string]uint64{}, lists: map[string]*cachedList[T]{}}
}

// update is called by the informer handler for every event, after the
// indexer has it: old is the previous state (zero for an add), obj the new
// one (zero for a delete). Removing old and inserting obj is idempotent,
// so a list built from an indexer that already held obj stays right.
func (c *listCache[T]) update(old, obj T) {
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
				if len(l.objs) == 0 && obj == zero {
					delete(c.lists, k) // the run or project is gone
				}
			}
		}
	}
	if obj != zero {
		for _, k := range c.keysOf(obj) {
			c.keys[k] = c.gen
			if l := c.lists[k]; l != nil {
				l.insert(obj, c.compare)
				l.gen = c.gen
			}
		}
	}
}

// get returns a copy of the list of key, building it with build when it
// is not cached. The generation is read before building: the indexer has
// every change up to it, so the list is at least that fresh, and if an
// event came in meanwhile the list is not kept (that event was not
// applied to it).
func (c *listCache[T]) get(key string, build func() ([]T, error)) ([]T, error) {
	c.mu.Lock()
	gen := c.keys[key]
	if l := c.lists[key]; l != nil && l.gen == gen {
		defer c.mu.Unlock()
		return slices.Clone(l.objs), nil
	}
	c.mu.Unlock()
	objs, err := build()
	if err != nil {
		return nil, err
	}
	c.sort(objs)
	c.mu.Lock()
	if c.keys[key] == gen {
		c.lists[key] = &cachedList[T]{gen: gen, objs: objs}
	}
	c.mu.Unlock()
	return slices.Clone(objs), nil
}

// forget drops everything (the informer stopped).
func (c *listCache[T]) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.keys)
	clear(c.lists)
}

// remove takes out the entry for the same object as obj, if present.
func (l *cachedList[T]) remove(obj T, compare func(a, b T) int) {
	if i, found := slices.BinarySearchFunc(l.objs, obj, compare); found {
		l.objs = slices.Delete(l.objs, i, i+1)
	}
}

// insert puts obj at its place, replacing an entry for the same object.
func (l *cachedList[T]) insert(obj T, compare func(a, b T) int) {
	if i, found := slices.BinarySearchFunc(l.objs, obj, compare); found {
		l.objs[i] = obj
	} else {
		l.objs = slices.Insert(l.objs, i, obj)
	}
}
