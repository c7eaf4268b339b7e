package history

import (
	"context"
	"fmt"
	"time"
)

// Logouts are kept here, in the database every replica shares: a logout
// on one replica must hold on all of them, and across restarts. A logout
// ends every browser session its token opened until then; keyed by the
// token's hash, the table stays as small as the set of tokens.

// EndSessions records that the sessions of the token with this hash that
// were opened before before are over. A later logout moves the time on;
// an earlier one changes nothing.
func (s *Store) EndSessions(ctx context.Context, tokenHash string, before time.Time) error {
	_, err := s.write.ExecContext(ctx, s.dialect.q(`INSERT INTO session_logouts (token_hash, not_before) VALUES (?, ?)
		ON CONFLICT (token_hash) DO UPDATE SET not_before = excluded.not_before
		WHERE excluded.not_before > session_logouts.not_before`), tokenHash, nanos(before))
	if err != nil {
		return fmt.Errorf("history: end sessions: %w", err)
	}
	return nil
}

// SessionLogouts returns, for each token that logged out, the time before
// which its sessions are over.
func (s *Store) SessionLogouts(ctx context.Context) (map[string]time.Time, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT token_hash, not_before FROM session_logouts`)
	if err != nil {
		return nil, fmt.Errorf("history: read logouts: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var h string
		var nb int64
		if err := rows.Scan(&h, &nb); err != nil {
			return nil, fmt.Errorf("history: read logouts: %w", err)
		}
		out[h] = fromNanos(nb)
	}
	return out, rows.Err()
}
