package history

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Sessions a logout ended are kept here, in the database every replica
// shares, until their cookies would have expired anyway: a logout on one
// replica must hold on all of them, and across restarts.

// RevokeSession records that session id ended; expires is when its cookie
// would have. Recording it twice is one record. Rows past their expiry go
// on the way.
func (s *Store) RevokeSession(ctx context.Context, id string, expires time.Time) error {
	now := nanos(time.Now())
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.dialect.q(`DELETE FROM revoked_sessions WHERE expires_at < ?`), now); err != nil {
			return fmt.Errorf("history: purge revoked sessions: %w", err)
		}
		_, err := tx.ExecContext(ctx, s.dialect.q(`INSERT INTO revoked_sessions (id, revoked_at, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (id) DO NOTHING`), id, now, nanos(expires))
		if err != nil {
			return fmt.Errorf("history: revoke session: %w", err)
		}
		return nil
	})
}

// RevokedSessions returns the unexpired sessions revoked at or after
// since, with when each expires.
func (s *Store) RevokedSessions(ctx context.Context, since time.Time) (map[string]time.Time, error) {
	rows, err := s.read.QueryContext(ctx, s.dialect.q(`SELECT id, expires_at FROM revoked_sessions
		WHERE revoked_at >= ? AND expires_at > ?`), nanos(since), nanos(time.Now()))
	if err != nil {
		return nil, fmt.Errorf("history: read revoked sessions: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var exp int64
		if err := rows.Scan(&id, &exp); err != nil {
			return nil, fmt.Errorf("history: read revoked sessions: %w", err)
		}
		out[id] = fromNanos(exp)
	}
	return out, rows.Err()
}
