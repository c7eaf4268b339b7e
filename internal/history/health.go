package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrUnavailable: the store did not answer, or not in time (a lock held
// by another process, a full disk, a network): every failure of a read
// or a write is one, wrapped with its cause. It is never ErrNotFound, so
// a store that does not answer is never taken for one that has nothing.
var ErrUnavailable = errors.New("the history store does not answer")

const (
	// ReadTimeout bounds a read: a request waits this long, then is told
	// to come back (503), rather than hang on a lock.
	ReadTimeout = 5 * time.Second
	// writeTimeout bounds a write (its caller retries).
	writeTimeout = 30 * time.Second
	// stuckAfter: a write that has waited this long makes the store
	// unhealthy before it fails.
	stuckAfter = 5 * time.Second
)

// fail wraps a failure of the store (what failed: "list runs"), noting
// one that says the database is damaged.
func (s *Store) fail(what string, err error) error {
	if errors.Is(err, ErrUnavailable) {
		return err
	}
	if corrupt(err) {
		s.markCorrupt(err)
	}
	if what == "" { // err says what it is
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return fmt.Errorf("history: %s: %w: %w", what, ErrUnavailable, err)
}

// reading bounds a read.
func reading(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, ReadTimeout)
}

// health follows the writes, for readiness: history records nothing
// while its last write failed (until one succeeds), or while one has
// waited past stuckAfter.
type health struct {
	mu       sync.Mutex
	inFlight map[uint64]time.Time
	next     uint64
	failed   error
	since    time.Time // of failed
	corrupt  error     // the database is damaged: only a restart (which sets it aside) helps
}

// writing bounds a write and notes its outcome: done takes its error.
func (s *Store) writing(ctx context.Context) (context.Context, func(error)) {
	h := &s.health
	h.mu.Lock()
	if h.inFlight == nil {
		h.inFlight = map[uint64]time.Time{}
	}
	id := h.next
	h.next++
	h.inFlight[id] = time.Now()
	h.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	return wctx, func(err error) {
		cancel()
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.inFlight, id)
		switch {
		case err == nil:
			h.failed = nil
		case ctx.Err() != nil:
			// The caller gave up (a stop): not the store's failure.
		case h.failed == nil:
			h.failed, h.since = err, time.Now()
		default:
			h.failed = err
		}
	}
}

// Health is nil while history records what it is given; else why not.
func (s *Store) Health() error {
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	switch {
	case h.corrupt != nil:
		return h.corrupt
	case h.failed != nil:
		return fmt.Errorf("its writes fail (for %s): %w", now.Sub(h.since).Round(time.Second), h.failed)
	}
	for _, started := range h.inFlight {
		if waited := now.Sub(started); waited > stuckAfter {
			return fmt.Errorf("a write has waited %s for it", waited.Round(time.Second))
		}
	}
	return nil
}
