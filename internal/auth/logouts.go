package auth

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"taskactions/internal/history"
)

// LogoutStore keeps logouts where every replica reads them (the history
// database): sessions ended one by one, and tokens whose sessions opened
// before a time are all over (what a token that ends many sessions has
// them folded into, and what a logout with a cookie that has no id ends).
type LogoutStore interface {
	EndSession(ctx context.Context, id, tokenHash string, expires time.Time) error
	EndSessions(ctx context.Context, tokenHash string, before time.Time) error
	SessionLogouts(ctx context.Context) (history.Logouts, error)
}

// Logouts are the browser sessions logouts ended. Each replica reads the
// store every few seconds, so a logout on one holds on all within that
// time; on the replica that served it, at once.
type Logouts struct {
	store LogoutStore
	mu    sync.RWMutex
	seen  history.Logouts

	// held are the long requests open with a session (see Sessions.Hold),
	// ended when a logout ends it. Bounded by the open connections.
	heldMu sync.Mutex
	held   map[*heldSession]struct{}
}

type heldSession struct {
	cl  claims
	end context.CancelFunc
}

// NewLogouts loads the logouts the store holds.
func NewLogouts(ctx context.Context, store LogoutStore) (*Logouts, error) {
	l := &Logouts{store: store, held: map[*heldSession]struct{}{}}
	return l, l.Load(ctx)
}

// End ends a session: by its id when it has one, else (a cookie from
// before sessions had ids) every session of its token opened until now.
func (l *Logouts) End(ctx context.Context, cl claims, now time.Time) error {
	var err error
	if cl.ID != "" {
		err = l.store.EndSession(ctx, cl.ID, cl.Sub, time.Unix(cl.Exp, 0))
	} else {
		err = l.store.EndSessions(ctx, cl.Sub, now)
	}
	if err != nil {
		return err
	}
	return l.Load(ctx) // what this logout did, folded or not, holds here at once
}

// over reports whether a logout ended the session of these claims.
func (l *Logouts) over(cl claims) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if _, ok := l.seen.Sessions[cl.ID]; ok && cl.ID != "" {
		return true
	}
	end, ok := l.seen.Tokens[cl.Sub]
	return ok && time.Unix(0, cl.Opened).Before(end)
}

// Load reads the store.
func (l *Logouts) Load(ctx context.Context) error {
	got, err := l.store.SessionLogouts(ctx)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.seen = got
	l.mu.Unlock()
	l.endHeld()
	return nil
}

// hold registers a long request of the session of cl (see Sessions.Hold).
func (l *Logouts) hold(cl claims) (context.Context, func()) {
	ctx, end := context.WithCancel(context.Background())
	h := &heldSession{cl: cl, end: end}
	l.heldMu.Lock()
	l.held[h] = struct{}{}
	l.heldMu.Unlock()
	if l.over(cl) { // a logout read between the request's check and here
		end()
	}
	return ctx, func() {
		l.heldMu.Lock()
		delete(l.held, h)
		l.heldMu.Unlock()
		end()
	}
}

// endHeld ends the held requests of the sessions the logouts now end.
func (l *Logouts) endHeld() {
	l.heldMu.Lock()
	defer l.heldMu.Unlock()
	for h := range l.held {
		if l.over(h.cl) {
			h.end()
			delete(l.held, h)
		}
	}
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
