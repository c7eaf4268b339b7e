package journal

import "sync"

// Subscription receives the events of one topic. Its mailbox never blocks
// the publisher: pending events coalesce per key, the latest moving to the
// back so cursors stay in order, and once more than the mailbox bound of
// distinct keys are pending the subscription is lagged: its pending events
// are dropped and the reader is told, so it can rebuild from a snapshot.
type Subscription[V any] struct {
	j     *Journal[V]
	topic string
	after uint64 // events at or below this cursor are already reflected
	limit int

	ready chan struct{} // holds a token while something is pending

	mu      sync.Mutex
	pending []Entry[V]     // in cursor order, superseded slots included
	index   map[string]int // key -> live slot in pending
	lagged  bool
	closed  bool
}

func newSubscription[V any](j *Journal[V], topic string, after uint64, limit int) *Subscription[V] {
	return &Subscription[V]{j: j, topic: topic, after: after, limit: limit, ready: make(chan struct{}, 1)}
}

// offer is called by Publish under the journal lock.
func (s *Subscription[V]) offer(e Entry[V]) {
	if e.Cursor <= s.after && !e.reordered {
		return
	}
	s.mu.Lock()
	if s.closed || s.lagged {
		s.mu.Unlock()
		return
	}
	if s.index == nil {
		s.index = map[string]int{}
	}
	if i, ok := s.index[e.Key]; ok {
		s.pending[i].superseded = true
		e.Prev, e.HasPrev = s.pending[i].Prev, s.pending[i].HasPrev
	}
	s.index[e.Key] = len(s.pending)
	s.pending = append(s.pending, e)
	switch {
	case len(s.index) > s.limit:
		s.lagged = true
		s.pending, s.index = nil, nil
	case len(s.pending) > 2*s.limit:
		s.compactLocked()
	}
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

func (s *Subscription[V]) compactLocked() {
	kept := s.pending[:0]
	for _, e := range s.pending {
		if !e.superseded {
			s.index[e.Key] = len(kept)
			kept = append(kept, e)
		}
	}
	clear(s.pending[len(kept):])
	s.pending = kept
}

// Ready is signalled when events may be pending; then call Drain.
func (s *Subscription[V]) Ready() <-chan struct{} { return s.ready }

// Wake signals Ready without an event, for a reader that waits on Ready
// alone and has something else to do now and then (a heartbeat).
func (s *Subscription[V]) Wake() {
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Drain appends the pending events to buf in cursor order and empties the
// mailbox. lagged reports that events were dropped: the subscription is
// dead and the reader must start over with a snapshot.
func (s *Subscription[V]) Drain(buf []Entry[V]) (out []Entry[V], lagged bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lagged {
		return buf, true
	}
	for _, e := range s.pending {
		if !e.superseded {
			buf = append(buf, e)
		}
	}
	// Keep a small backing array for the next burst; drop a big one.
	if cap(s.pending) > 64 {
		s.pending = nil
	} else {
		clear(s.pending)
		s.pending = s.pending[:0]
	}
	clear(s.index)
	return buf, false
}

// Close unsubscribes. It is safe to call more than once.
func (s *Subscription[V]) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.pending, s.index = nil, nil
	s.mu.Unlock()
	s.j.unsubscribe(s)
}
