package taskactions

import (
	"sync"

	v1 "taskactions/api/v1"
)

// listCache keeps sorted index lists (a run's actions, a parent's
// children) until an event touches them. Sorting 10,000 actions costs
// milliseconds; a finished run, the usual thing a dashboard shows, never
// changes again, so its list is sorted once.
//
// Each key has a generation, bumped by every event for it; a list is
// served only while the generation it was built at is current. Bumping
// also drops the list, so only lists of unchanged keys take memory.
type listCache struct {
	mu    sync.Mutex
	gen   uint64
	keys  map[string]uint64 // index key -> generation of its last change
	lists map[string]cachedList
}

type cachedList struct {
	gen uint64
	tas []*v1.TaskAction
}

func newListCache() *listCache {
	return &listCache{keys: map[string]uint64{}, lists: map[string]cachedList{}}
}

// invalidate is called by the informer handler for every event, after the
// cache (indexer) has it.
func (c *listCache) invalidate(keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, k := range keys {
		c.keys[k] = c.gen
		delete(c.lists, k)
	}
}

// get returns a copy of the list of key, building it with build when the
// cached one is out of date. The generation is read before building: the
// indexer has every change up to it, so the list is at least that fresh.
func (c *listCache) get(key string, build func() ([]*v1.TaskAction, error)) ([]*v1.TaskAction, error) {
	c.mu.Lock()
	gen := c.keys[key]
	l, ok := c.lists[key]
	c.mu.Unlock()
	if ok && l.gen == gen {
		return append([]*v1.TaskAction(nil), l.tas...), nil
	}
	tas, err := build()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.keys[key] == gen {
		c.lists[key] = cachedList{gen: gen, tas: tas}
	}
	c.mu.Unlock()
	return append([]*v1.TaskAction(nil), tas...), nil
}

// forget drops everything (the informer stopped).
func (c *listCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.keys)
	clear(c.lists)
}
