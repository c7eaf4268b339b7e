package history

import (
	"testing"
	"time"
)

// A revoked session is listed until its expiry, once however often it is
// revoked, and only to readers asking from before its revocation.
func TestRevokedSessions(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			before := time.Now().Add(-time.Second)
			for _, r := range []struct {
				id  string
				exp time.Duration
			}{{"a", time.Hour}, {"a", time.Hour}, {"gone", -time.Minute}} {
				if err := s.RevokeSession(ctx, r.id, time.Now().Add(r.exp)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.RevokedSessions(ctx, before)
			if err != nil || len(got) != 1 || got["a"].Before(time.Now().Add(59*time.Minute)) {
				t.Fatalf("revoked since before: %v %v, want a alone, expiring in an hour", got, err)
			}
			if got, err := s.RevokedSessions(ctx, time.Now().Add(time.Second)); err != nil || len(got) != 0 {
				t.Errorf("revoked since after: %v %v, want none", got, err)
			}
			if err := s.RevokeSession(ctx, "b", time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM revoked_sessions`).Scan(&n); err != nil || n != 2 {
				t.Errorf("%d rows (%v), want 2: the expired one goes", n, err)
			}
		})
	}
}
