package executor

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
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
		write func(*leaseClock) error
		allow bool
	}{
		{"never held", time.Hour, nil, false},
		{"acquired", time.Hour, func(l *leaseClock) error { return l.Create(ctx, me) }, true},
		{"renewed", time.Hour, func(l *leaseClock) error { return l.Update(ctx, me) }, true},
		{"renewal too long ago", -time.Nanosecond, func(l *leaseClock) error { return l.Update(ctx, me) }, false},
		{"released", time.Hour, func(l *leaseClock) error {
			_ = l.Update(ctx, me)
			return l.Update(ctx, resourcelock.LeaderElectionRecord{})
		}, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clock := &leaseClock{Interface: lockStub{id: "me"}}
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
