package runs

import (
	"context"
	"fmt"

	"taskactions/internal/history"
)

// lock is a mutex that a reader can stop waiting for: a commit holds the
// service's lock while the store makes it wait (another process's lock on
// SQLite, a locked table in PostgreSQL), and a request must not hang on it
// for as long as that lasts.
type lock chan struct{}

func newLock() lock { return make(lock, 1) }

func (l lock) Lock()   { l <- struct{}{} }
func (l lock) Unlock() { <-l }

// LockCtx takes the lock, or gives up after history.ReadTimeout (or when
// ctx ends) with history.ErrUnavailable.
func (l lock) LockCtx(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, history.ReadTimeout)
	defer cancel()
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runs: a write to the store is waiting: %w: %w", history.ErrUnavailable, ctx.Err())
	}
}
