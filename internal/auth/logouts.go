package auth

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// LogoutStore keeps logouts where every replica reads them (the history
// database): per token hash, the time before which its sessions are over.
type LogoutStore interface {
	EndSessions(ctx context.Context, tokenHash string, before time.Time) error
	SessionLogouts(ctx context.Context) (map[string]time.Time, error)
}

// Logouts are the browser sessions logouts ended. A logout ends every
// session its token opened until then, so what is kept is one time per
// token: as small as the set of tokens, whatever a client does. Each
// replica reads the store every few seconds, so a logout on one holds on
// all within that time; on the replica that served it, at once.
type Logouts struct {
	store LogoutStore
	mu    sync.RWMutex
	ended map[string]time.Time // token hash -> sessions opened before are over
}

// NewLogouts loads the logouts the store holds.
func NewLogouts(ctx context.Context, store LogoutStore) (*Logouts, error) {
	l := &Logouts{store: store, ended: map[string]time.Time{}}
	return l, l.Load(ctx)
}

// End ends the sessions of a token opened before at.
func (l *Logouts) End(ctx context.Context, tokenHash string, at time.Time) error {
	if err := l.store.EndSessions(ctx, tokenHash, at); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.After(l.ended[tokenHash]) {
		l.ended[tokenHash] = at
	}
	return nil
}

// over reports whether a session of the token opened at opened was ended.
func (l *Logouts) over(tokenHash string, opened time.Time) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	end, ok := l.ended[tokenHash]
	return ok && opened.Before(end)
}

// Load reads the store.
func (l *Logouts) Load(ctx context.Context) error {
	got, err := l.store.SessionLogouts(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for h, at := range got {
		if at.After(l.ended[h]) {
			l.ended[h] = at
		}
	}
	return nil
}

// Run reads the store every interval until ctx ends.
func (l *Logouts) Run(ctx context.Context, every time.Duration, log zerolog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.Load(ctx); err != nil && ctx.Err() == nil {
				log.Warn().Err(err).Msg("logouts: the store could not be read; retrying")
			}
		}
	}
}
