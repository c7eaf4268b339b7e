package history

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Logouts are kept here, in the database every replica shares: a logout
// on one replica must hold on all of them, and across restarts.

// MaxEndedSessions bounds the sessions kept ended one by one per token:
// past it, the token's ended sessions fold into one time before which all
// its sessions are over (the live ones of that moment included).
const MaxEndedSessions = 50

// EndSession records that session id, opened with the token of this hash,
// is over until its cookie expires. Ending it twice is one record.
func (s *Store) EndSession(ctx context.Context, id, tokenHash string, expires time.Time) error {
	now := time.Now()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.dialect.q(`DELETE FROM ended_sessions WHERE expires_at < ?`), nanos(now)); err != nil {
			return fmt.Errorf("history: end a session: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.dialect.q(`INSERT INTO ended_sessions (id, token_hash, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (id) DO NOTHING`), id, tokenHash, nanos(expires)); err != nil {
			return fmt.Errorf("history: end a session: %w", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, s.dialect.q(`SELECT COUNT(*) FROM ended_sessions WHERE token_hash = ?`), tokenHash).Scan(&n); err != nil {
			return fmt.Errorf("history: end a session: %w", err)
		}
		if n <= MaxEndedSessions {
			return nil
		}
		if _, err := tx.ExecContext(ctx, s.dialect.q(`DELETE FROM ended_sessions WHERE token_hash = ?`), tokenHash); err != nil {
			return fmt.Errorf("history: end a session: %w", err)
		}
		return s.endSessionsTx(ctx, tx, tokenHash, now)
	})
}

// EndSessions records that every session of the token of this hash opened
// before before is over (a later time moves it on, an earlier one does
// nothing).
func (s *Store) EndSessions(ctx context.Context, tokenHash string, before time.Time) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.endSessionsTx(ctx, tx, tokenHash, before) })
}

func (s *Store) endSessionsTx(ctx context.Context, tx *sql.Tx, tokenHash string, before time.Time) error {
	_, err := tx.ExecContext(ctx, s.dialect.q(`INSERT INTO session_logouts (token_hash, not_before) VALUES (?, ?)
		ON CONFLICT (token_hash) DO UPDATE SET not_before = excluded.not_before
		WHERE excluded.not_before > session_logouts.not_before`), tokenHash, nanos(before))
	if err != nil {
		return fmt.Errorf("history: end sessions: %w", err)
	}
	return nil
}

// Logouts is what logouts ended: sessions one by one, and tokens whose
// sessions opened before a time.
type Logouts struct {
	Sessions map[string]struct{}
	Tokens   map[string]time.Time
}

// SessionLogouts reads every logout still in force (a few rows per token).
func (s *Store) SessionLogouts(ctx context.Context) (Logouts, error) {
	ctx, cancel := reading(ctx)
	defer cancel()
	out := Logouts{Sessions: map[string]struct{}{}, Tokens: map[string]time.Time{}}
	rows, err := s.read.QueryContext(ctx, s.dialect.q(`SELECT id FROM ended_sessions WHERE expires_at > ?`), nanos(time.Now()))
	if err != nil {
		return out, s.fail("read logouts", err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return out, s.fail("read logouts", err)
		}
		out.Sessions[id] = struct{}{}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, s.fail("read logouts", err)
	}
	rows, err = s.read.QueryContext(ctx, `SELECT token_hash, not_before FROM session_logouts`)
	if err != nil {
		return out, s.fail("read logouts", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h string
		var nb int64
		if err := rows.Scan(&h, &nb); err != nil {
			return out, s.fail("read logouts", err)
		}
		out.Tokens[h] = fromNanos(nb)
	}
	if err := rows.Err(); err != nil {
		return out, s.fail("read logouts", err)
	}
	return out, nil
}
