package executor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	v1 "taskactions/api/v1"
	"taskactions/internal/taskactions"
)

// ErrLeaseLost refuses a write of a replica whose hold on the executor's
// Lease may have ended.
var ErrLeaseLost = errors.New("this replica may no longer hold the executor's Lease")

// leaseClock is the Lease lock that remembers when this replica last
// acquired or renewed it: the start of the last write of the Lease that
// named it holder and worked.
type leaseClock struct {
	resourcelock.Interface
	renewed atomic.Int64 // unix nanoseconds; 0: never
}

func (l *leaseClock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec, func() error { return l.Interface.Create(ctx, rec) })
}

func (l *leaseClock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec, func() error { return l.Interface.Update(ctx, rec) })
}

func (l *leaseClock) write(rec resourcelock.LeaderElectionRecord, do func() error) error {
	start := time.Now()
	err := do()
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.renewed.Store(start.UnixNano())
	} else if err == nil {
		l.renewed.Store(0) // released
	}
	return err
}

// fence is how long this replica's writes are safe: another replica takes
// the Lease only after seeing it unrenewed for the whole lease duration,
// counted from after the last renewal started; the writes stop a margin
// before that (valid: the renew deadline).
type fence struct {
	clock *leaseClock
	valid time.Duration

	writes, refused prometheus.Counter
}

func newFence(clock *leaseClock, valid time.Duration, reg prometheus.Registerer) *fence {
	f := &fence{
		clock: clock, valid: valid,
		writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskactions_executor_writes_total", Help: "Writes of the executor (status and metadata) sent while holding the Lease.",
		}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskactions_executor_fenced_writes_total", Help: "Writes of the executor refused because its hold on the Lease may have ended.",
		}),
	}
	if reg != nil {
		reg.MustRegister(f.writes, f.refused)
	}
	return f
}

// until is when this replica's writes stop being safe.
func (f *fence) until() time.Time {
	renewed := f.clock.renewed.Load()
	if renewed == 0 {
		return time.Time{}
	}
	return time.Unix(0, renewed).Add(f.valid)
}

// guard returns ctx bounded by the fence, or ErrLeaseLost once it passed.
func (f *fence) guard(ctx context.Context) (context.Context, context.CancelFunc, error) {
	until := f.until()
	if !time.Now().Before(until) {
		f.refused.Inc()
		return nil, nil, ErrLeaseLost
	}
	f.writes.Inc()
	ctx, cancel := context.WithDeadline(ctx, until)
	return ctx, cancel, nil
}

// fencedActions is the action manager whose writes go out only while the
// fence holds: a replica paused past its Lease (a long GC, a frozen VM)
// must not write a status after another replica took over.
type fencedActions struct {
	Actions
	fence *fence
}

func (a fencedActions) UpdateStatus(ctx context.Context, id taskactions.ActionID, mutate func(*v1.TaskAction) error) (*v1.TaskAction, error) {
	ctx, cancel, err := a.fence.guard(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return a.Actions.UpdateStatus(ctx, id, mutate)
}

func (a fencedActions) UpdateMeta(ctx context.Context, id taskactions.ActionID, mutate func(*v1.TaskAction) error) (*v1.TaskAction, error) {
	ctx, cancel, err := a.fence.guard(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return a.Actions.UpdateMeta(ctx, id, mutate)
}

// RefuseLate wraps a client's transport so that no request goes out once
// its context's deadline has passed. A deadline takes effect when the
// runtime's timer fires, and a replica resumed from a pause (SIGSTOP, a
// frozen VM) runs its goroutines before that: a write that passed guard
// just before the pause went out after it, 250 ms after the resume and
// long past the fence, in test/cluster's pause. This closes that window
// for the fenced writes; for any other request it only fails sooner what
// its context would have failed.
func RefuseLate(next http.RoundTripper) http.RoundTripper {
	return refuseLate{next}
}

type refuseLate struct{ next http.RoundTripper }

func (t refuseLate) RoundTrip(r *http.Request) (*http.Response, error) {
	if d, ok := r.Context().Deadline(); ok && !time.Now().Before(d) {
		return nil, fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, context.DeadlineExceeded)
	}
	return t.next.RoundTrip(r)
}

// WrappedRoundTripper lets client-go's transport debugging see through.
func (t refuseLate) WrappedRoundTripper() http.RoundTripper { return t.next }
