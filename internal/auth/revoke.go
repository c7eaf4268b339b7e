package auth

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// RevocationStore keeps the sessions a logout ended where every replica
// reads them (the history database).
type RevocationStore interface {
	RevokeSession(ctx context.Context, id string, expires time.Time) error
	RevokedSessions(ctx context.Context, since time.Time) (map[string]time.Time, error)
}

// Revocations is the set of sessions ended by a logout before their
// cookies expired. Each replica reads the store every few seconds, so a
// logout on one holds on all of them within that time; on the replica
// that served it, at once.
type Revocations struct {
	store RevocationStore
	mu    sync.RWMutex
	ids   map[string]time.Time // id -> when its cookie expires
	read  time.Time            // when the store was last read
}

// refreshOverlap re-reads a little of what the last read saw: replicas'
// clocks and a revocation's commit need not agree to the millisecond.
const refreshOverlap = 30 * time.Second

// NewRevocations loads the revocations the store holds.
func NewRevocations(ctx context.Context, store RevocationStore) (*Revocations, error) {
	r := &Revocations{store: store, ids: map[string]time.Time{}}
	return r, r.refresh(ctx)
}

// Revoke ends session id, whose cookie expires at expires.
func (r *Revocations) Revoke(ctx context.Context, id string, expires time.Time) error {
	if err := r.store.RevokeSession(ctx, id, expires); err != nil {
		return err
	}
	r.mu.Lock()
	r.ids[id] = expires
	r.mu.Unlock()
	return nil
}

// Revoked reports whether session id was ended.
func (r *Revocations) Revoked(id string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.ids[id]
	return ok
}

// Run reads the store every interval until ctx ends.
func (r *Revocations) Run(ctx context.Context, every time.Duration, log zerolog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.refresh(ctx); err != nil && ctx.Err() == nil {
				log.Warn().Err(err).Msg("session revocations: the store could not be read; retrying")
			}
		}
	}
}

func (r *Revocations) refresh(ctx context.Context) error {
	start := time.Now()
	r.mu.RLock()
	since := r.read.Add(-refreshOverlap)
	r.mu.RUnlock()
	got, err := r.store.RevokedSessions(ctx, since)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, exp := range got {
		r.ids[id] = exp
	}
	for id, exp := range r.ids {
		if start.After(exp) {
			delete(r.ids, id)
		}
	}
	r.read = start
	return nil
}
