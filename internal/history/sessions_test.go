package history

import (
	"fmt"
	"testing"
	"time"
)

// A logout ends one session, once however often it is recorded; a token
// that ends more than MaxEndedSessions has them folded into one time, so
// the tables stay a few rows per token; an expired session's row goes.
func TestSessionLogouts(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			week := time.Now().Add(7 * 24 * time.Hour)
			for _, id := range []string{"a", "a", "b"} {
				if err := s.EndSession(ctx, id, "bob", week); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.EndSession(ctx, "old", "eve", time.Now().Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
			got, err := s.SessionLogouts(ctx)
			if err != nil || len(got.Sessions) != 2 || len(got.Tokens) != 0 {
				t.Fatalf("logouts %+v %v, want sessions a and b, no token", got, err)
			}
			before := time.Now()
			for i := range MaxEndedSessions - 1 { // with a and b: one past the bound
				if err := s.EndSession(ctx, fmt.Sprint("s", i), "bob", week); err != nil {
					t.Fatal(err)
				}
			}
			got, err = s.SessionLogouts(ctx)
			if err != nil || len(got.Sessions) != 0 || got.Tokens["bob"].Before(before) {
				t.Fatalf("after %d logouts: %d sessions, bob's time %v (%v); want none, and bob's sessions ended as a whole", MaxEndedSessions+1, len(got.Sessions), got.Tokens["bob"], err)
			}
			var n int
			if err := s.read.QueryRowContext(ctx, `SELECT COUNT(*) FROM ended_sessions`).Scan(&n); err != nil || n != 0 {
				t.Errorf("%d ended_sessions rows (%v), want 0 (folded, and eve's expired)", n, err)
			}
		})
	}
}
