package executor

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"taskactions/internal/lease"
)

// lockStub is a Lease lock that accepts every write (a pure unit: the
// fence's rule, not the API server's, is under test).
type lockStub struct {
	resourcelock.Interface
	id string
}

func (l lockStub) Identity() string { return l.id }
func (l lockStub) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	return nil
}
func (l lockStub) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	return nil
}

// TestFence: writes go out only after this replica acquired or renewed the
// Lease, and only until the valid period after that renewal ends; a
// release ends them at once.
func TestFence(t *testing.T) {
	ctx := t.Context()
	me := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	steps := []struct {
		name  string
		valid time.Duration
		write func(*lease.Clock) error
		allow bool
	}{
		{"never held", time.Hour, nil, false},
		{"acquired", time.Hour, func(l *lease.Clock) error { return l.Create(ctx, me) }, true},
		{"renewed", time.Hour, func(l *lease.Clock) error { return l.Update(ctx, me) }, true},
		{"renewal too long ago", -time.Nanosecond, func(l *lease.Clock) error { return l.Update(ctx, me) }, false},
		{"released", time.Hour, func(l *lease.Clock) error {
			_ = l.Update(ctx, me)
			return l.Update(ctx, resourcelock.LeaderElectionRecord{})
		}, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clock := lease.NewClock(lockStub{id: "me"})
			if s.write != nil {
				if err := s.write(clock); err != nil {
					t.Fatal(err)
				}
			}
			f := newFence(clock, s.valid, nil)
			wctx, cancel, err := f.guard(ctx)
			if allowed := err == nil; allowed != s.allow {
				t.Fatalf("guard: %v, want allowed %v", err, s.allow)
			}
			if err != nil {
				if !errors.Is(err, ErrLeaseLost) {
					t.Fatalf("err = %v, want ErrLeaseLost", err)
				}
				return
			}
			defer cancel()
			if d, ok := wctx.Deadline(); !ok || d.After(time.Now().Add(s.valid)) {
				t.Fatalf("write context deadline %v (set %v), want at most the fence's end", d, ok)
			}
		})
	}
}

// lateCtx is a context whose deadline has passed before its timer fired,
// as a goroutine of a resumed process sees it.
type lateCtx struct{ context.Context }

func (lateCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

type countingTransport struct{ sent int }

func (c *countingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	c.sent++
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

// A request whose deadline passed is not sent, even while its context
// does not say so yet; others are.
func TestRefuseLate(t *testing.T) {
	next := &countingTransport{}
	rt := RefuseLate(next)
	late, _ := http.NewRequestWithContext(lateCtx{context.Background()}, http.MethodPut, "http://cp/status", nil)
	if _, err := rt.RoundTrip(late); !errors.Is(err, context.DeadlineExceeded) || next.sent != 0 {
		t.Errorf("a request past its deadline: err %v, sent %d; want DeadlineExceeded, none sent", err, next.sent)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range []context.Context{ctx, context.Background()} {
		r, _ := http.NewRequestWithContext(c, http.MethodPut, "http://cp/status", nil)
		if _, err := rt.RoundTrip(r); err != nil {
			t.Errorf("a request in time: %v", err)
		}
	}
	if next.sent != 2 {
		t.Errorf("sent %d requests in time, want 2", next.sent)
	}
}
