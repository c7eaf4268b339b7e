package history

import (
	"testing"
	"time"
)

// A logout moves its token's time on, never back, and every reader sees
// it; other tokens are untouched.
func TestSessionLogouts(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			t1 := time.Unix(1_800_000_000, 5).UTC()
			t2 := t1.Add(time.Hour)
			for _, at := range []time.Time{t1, t2, t1} { // the last one is older: no change
				if err := s.EndSessions(ctx, "bob", at); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.EndSessions(ctx, "eve", t1); err != nil {
				t.Fatal(err)
			}
			got, err := s.SessionLogouts(ctx)
			if err != nil || len(got) != 2 || !got["bob"].Equal(t2) || !got["eve"].Equal(t1) {
				t.Fatalf("logouts %v %v, want bob at %v and eve at %v", got, err, t2, t1)
			}
		})
	}
}
