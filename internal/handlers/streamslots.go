package handlers

import "sync/atomic"

// streamSlots bounds the open event streams. Each holds a connection, and
// so a file descriptor, for as long as its client likes: unbounded, they
// would starve the embedded etcd of descriptors, which it answers by
// exiting. Past the bound a new stream gets 503 with Retry-After.
type streamSlots struct {
	open atomic.Int64
	max  int64 // 0: no bound
}

func newStreamSlots(max int) *streamSlots { return &streamSlots{max: int64(max)} }

func (s *streamSlots) acquire() bool {
	if n := s.open.Add(1); s.max > 0 && n > s.max {
		s.open.Add(-1)
		return false
	}
	return true
}

func (s *streamSlots) release() { s.open.Add(-1) }
