package taskactions

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	v1 "taskactions/api/v1"
)

// listCache keeps sorted index lists (a run's actions, a parent's
// children) and patches them with each event, so a list of 10,000 actions
// is sorted once, when first asked for, and not again on every status
// change of a busy run.
//
// Each key has a generation, bumped by every event for it. A list built
// from the indexer is kept only if no event for its key arrived while it
// was built; from then on the events keep it current.
type listCache struct {
	mu    sync.Mutex
	gen   uint64
	keys  map[string]uint64 // index key -> generation of its last change
	lists map[string]*cachedList
}

type cachedList struct {
	gen uint64
	tas []*v1.TaskAction // sorted by listOrder
}

func newListCache() *listCache {
	return &listCache{keys: map[string]uint64{}, lists: map[string]*cachedList{}}
}

// update is called by the informer handler for every event, after the
// indexer has it: old is the previous state (nil for an add), ta the new
// one (nil for a delete). Removing old and inserting ta is idempotent, so
// a list built from an indexer that already held ta stays right.
func (c *listCache) update(old, ta *v1.TaskAction) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if old != nil {
		for _, k := range listKeys(&old.Spec) {
			c.keys[k] = c.gen
			if l := c.lists[k]; l != nil {
				l.remove(old)
				l.gen = c.gen
				if len(l.tas) == 0 && ta == nil {
					delete(c.lists, k) // the run or parent is gone
				}
			}
		}
	}
	if ta != nil {
		for _, k := range listKeys(&ta.Spec) {
			c.keys[k] = c.gen
			if l := c.lists[k]; l != nil {
				l.insert(ta)
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
func (c *listCache) get(key string, build func() ([]*v1.TaskAction, error)) ([]*v1.TaskAction, error) {
	c.mu.Lock()
	gen := c.keys[key]
	if l := c.lists[key]; l != nil && l.gen == gen {
		defer c.mu.Unlock()
		return slices.Clone(l.tas), nil
	}
	c.mu.Unlock()
	tas, err := build()
	if err != nil {
		return nil, err
	}
	sortByAge(tas)
	c.mu.Lock()
	if c.keys[key] == gen {
		c.lists[key] = &cachedList{gen: gen, tas: tas}
	}
	c.mu.Unlock()
	return slices.Clone(tas), nil
}

// forget drops everything (the informer stopped).
func (c *listCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.keys)
	clear(c.lists)
}

// remove takes out the entry for the same object as ta, if present.
func (l *cachedList) remove(ta *v1.TaskAction) {
	if i, found := l.find(ta); found {
		l.tas = slices.Delete(l.tas, i, i+1)
	}
}

// insert puts ta at its place, replacing an entry for the same object.
func (l *cachedList) insert(ta *v1.TaskAction) {
	if i, found := l.find(ta); found {
		l.tas[i] = ta
	} else {
		l.tas = slices.Insert(l.tas, i, ta)
	}
}

func (l *cachedList) find(ta *v1.TaskAction) (int, bool) {
	return slices.BinarySearchFunc(l.tas, ta, listOrder)
}

// listOrder is oldest first, then by action name; namespace and object
// name make it total, for lists that span runs (a cache key's).
func listOrder(a, b *v1.TaskAction) int {
	if c := a.CreationTimestamp.Time.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Or(
		strings.Compare(a.Spec.ActionName, b.Spec.ActionName),
		strings.Compare(a.Namespace, b.Namespace),
		strings.Compare(a.Name, b.Name),
	)
}

// sortByAge sorts by listOrder. The time keys are taken out first: a run
// of 10,000 actions makes some 130,000 comparisons.
func sortByAge(tas []*v1.TaskAction) {
	type keyed struct {
		created int64
		ta      *v1.TaskAction
	}
	ks := make([]keyed, len(tas))
	for i, ta := range tas {
		ks[i] = keyed{ta.CreationTimestamp.UnixNano(), ta}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if c := cmp.Compare(a.created, b.created); c != 0 {
			return c
		}
		return listOrder(a.ta, b.ta)
	})
	for i := range ks {
		tas[i] = ks[i].ta
	}
}
