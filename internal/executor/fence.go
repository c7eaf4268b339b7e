package executor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v1 "taskactions/api/v1"
	"taskactions/internal/lease"
	"taskactions/internal/taskactions"
)

// ErrLeaseLost refuses a write of a replica whose hold on the executor's
// Lease may have ended.
var ErrLeaseLost = errors.New("this replica may no longer hold the executor's Lease")

// fence is the Lease's fence (lease.Fence: writes stop the renew
// deadline after the last renewal, before another replica can take
// over), counted.
type fence struct {
	lease *lease.Fence

	writes, refused prometheus.Counter
}

func newFence(clock *lease.Clock, valid time.Duration, reg prometheus.Registerer) *fence {
	f := &fence{
		lease: lease.NewFence(clock, valid),
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
func (f *fence) until() time.Time { return f.lease.Until() }

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
