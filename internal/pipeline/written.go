package pipeline

import (
	"context"
	"sync"
	"time"
)

// rvWaiter tracks the highest resource version the informer has delivered,
// so that a read can wait for a write this server just made: a client that
// creates an action and lists the run at once sees it.
type rvWaiter struct {
	mu   sync.Mutex
	seen uint64
	want uint64        // highest version this server wrote
	ch   chan struct{} // closed and replaced when seen advances
	// pending holds, by uid, the version of this server's last write of an
	// object whose event has not come back yet (for milliseconds, usually).
	pending map[string]uint64
	// deleting holds, by uid, objects this server is deleting or deleted
	// whose deletion the cache has not taken in yet.
	deleting  map[string]deletion
	deletions uint64 // how many deletingObject noted, for their seq
}

// deletion is one object's in deleting: the order it was noted in (a read
// waits only for those noted before it began: a large abort deletes for
// a while, and reads must not wait for all of it) and when the wait for it
// lapses (a deletion whose event never comes must not hold reads back).
//
// More than one delete of an object may be in flight (a request's abort
// and the aborter's): sending counts them, until each is done, with what
// the deletion leaves to record recorded (an abort's history). The note
// goes once none is in flight and either none deleted the object (sent)
// or its deletion's event came (gone): a read must not find the object
// gone from the cache while its deleter has yet to record why.
type deletion struct {
	seq     uint64
	until   time.Time
	sending int
	sent    bool
	gone    bool
}

// advance notes that the cache holds every version up to rv.
func (w *rvWaiter) advance(rv uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advanceLocked(rv)
}

func (w *rvWaiter) advanceLocked(rv uint64) {
	if rv <= w.seen {
		return
	}
	w.seen = rv
	w.wakeLocked()
}

// wakeLocked wakes the reads that wait, to look again.
func (w *rvWaiter) wakeLocked() {
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// wrote notes a version this server wrote.
func (w *rvWaiter) wrote(rv uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want = max(w.want, rv)
}

// wroteObject notes a version of one object this server wrote.
func (w *rvWaiter) wroteObject(uid string, rv uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want = max(w.want, rv)
	if w.pending == nil {
		w.pending = map[string]uint64{}
	}
	w.pending[uid] = max(w.pending[uid], rv)
}

// deletingObject notes that this server is about to delete an object.
// It is noted before the delete is sent, so that its event, however soon
// it comes, finds it.
func (w *rvWaiter) deletingObject(uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deleting == nil {
		w.deleting = map[string]deletion{}
	}
	w.deletions++
	d, ok := w.deleting[uid]
	if !ok {
		d.seq = w.deletions
	}
	d.until = time.Now().Add(maxReadWait)
	d.sending++
	w.deleting[uid] = d
}

// deletionDone notes how one delete noted by deletingObject went. The
// last in flight of an object takes the note away when none deleted it,
// or when its deletion's event came.
func (w *rvWaiter) deletionDone(uid string, deleted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	d, ok := w.deleting[uid]
	if !ok {
		return // it lapsed
	}
	d.sending--
	d.sent = d.sent || deleted
	if d.sending == 0 && (!d.sent || d.gone) {
		delete(w.deleting, uid)
		w.wakeLocked()
		return
	}
	w.deleting[uid] = d
}

// awaitingDeletionLocked reports whether a deletion this server noted up
// to seq has yet to reach the cache, dropping those whose wait lapsed.
func (w *rvWaiter) awaitingDeletionLocked(seq uint64, now time.Time) bool {
	waiting := false
	for uid, d := range w.deleting {
		switch {
		case now.After(d.until):
			delete(w.deleting, uid)
		case d.seq <= seq:
			waiting = true
		}
	}
	return waiting
}

// saw notes an event of an object at rv: a write of it up to rv is back,
// its deletion too when gone (deleted, or marked for deletion) and, for a
// live event (not the initial list's), every version up to rv.
func (w *rvWaiter) saw(uid string, rv uint64, live, gone bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if v, ok := w.pending[uid]; ok && rv >= v {
		delete(w.pending, uid)
	}
	if d, ok := w.deleting[uid]; ok && gone {
		if d.sending > 0 { // its deleter has yet to record it
			d.gone = true
			w.deleting[uid] = d
		} else {
			delete(w.deleting, uid)
			// A deletion found by a re-list comes with the object's last
			// version, which moves seen on no further: wake the reads here.
			w.wakeLocked()
		}
	}
	if live {
		w.advanceLocked(rv)
	}
}

// behind reports whether this server wrote the object at a version past
// rv whose event has not come back.
func (w *rvWaiter) behind(uid string, rv uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.pending[uid]
	return ok && v > rv
}

// maxReadWait bounds how long a read waits for the cache; after it the
// read is served from what the cache has.
const maxReadWait = 2 * time.Second

// catchUp waits until the cache reflects every write this server made
// before the call, deletions included.
func (w *rvWaiter) catchUp(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, maxReadWait)
	defer cancel()
	w.mu.Lock()
	want, deletions := w.want, w.deletions
	w.mu.Unlock()
	for {
		w.mu.Lock()
		if w.seen >= want && !w.awaitingDeletionLocked(deletions, time.Now()) {
			w.mu.Unlock()
			return
		}
		if w.ch == nil {
			w.ch = make(chan struct{})
		}
		ch := w.ch
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}
