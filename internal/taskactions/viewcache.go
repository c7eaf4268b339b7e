package taskactions

import (
	"sync"

	v1 "taskactions/api/v1"
)

// viewCache holds the latest update of each cached action, the one the
// informer handler built and published. Lists and snapshots take their
// views from it, so the view of an unchanged action is built once and its
// encodings (memoized on the update) are made once, however many lists and
// stream snapshots show it: a run of 10,000 actions costs a copy of
// encoded bytes per list, not 10,000 conversions and JSON encodings.
type viewCache struct {
	mu sync.RWMutex
	m  map[objectKey]*ActionUpdate
}

type objectKey struct{ namespace, name string }

func newViewCache() *viewCache { return &viewCache{m: map[objectKey]*ActionUpdate{}} }

// update is called by the informer handler for every event, with the
// update it built. It returns the update it replaces (nil for a new
// object).
func (c *viewCache) update(ta *v1.TaskAction, u *ActionUpdate) (prev *ActionUpdate) {
	k := objectKey{ta.Namespace, ta.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	prev = c.m[k]
	if u.Deleted {
		delete(c.m, k)
	} else {
		c.m[k] = u
	}
	return prev
}

// of returns the update for ta's current state: the cached one when it is
// of the same resource version, else (the indexer got ta before the
// handler did) one built now.
func (c *viewCache) of(ta *v1.TaskAction) *ActionUpdate {
	c.mu.RLock()
	u := c.m[objectKey{ta.Namespace, ta.Name}]
	c.mu.RUnlock()
	if u != nil && u.ResourceVersion == ta.ResourceVersion && u.UID == string(ta.UID) {
		return u
	}
	return updateOf(ta, false)
}

func (c *viewCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}

// Views returns the current update of each of tas (from the reads above),
// in the same order. The updates are shared: treat them as read-only.
func (m *Manager) Views(tas []*v1.TaskAction) []*ActionUpdate {
	out := make([]*ActionUpdate, len(tas))
	for i, ta := range tas {
		out[i] = m.views.of(ta)
	}
	return out
}
