package executor

import (
	"context"

	"taskactions/internal/lease"
	"taskactions/internal/lifecycle"
)

// LeaseName is the Lease replicas compete for.
const LeaseName = "taskactions-executor"

// RunWithLeaderElection runs the executor only while this replica holds the
// Lease <namespace>/taskactions-executor (package lease), so that of
// several replicas on one cluster exactly one executes. It needs the
// coordination API, which the embedded control plane does not serve (and
// does not need: its data-dir lock admits one process). Every write of
// the executor is fenced by the Lease (fence.go): it stops RenewDeadline
// after the last renewal, before another replica can take over. It
// returns when ctx ends (nil), or with the executor's error.
//
// beside, when not nil, runs with the executor under the same Lease, its
// context carrying the same fence (lease.WithFence): work that must run
// where the executor does. The Kargo controllers are such work: they read
// a Promotion's step outputs from the executor's output dirs. The first of
// the two to fail ends the other.
func RunWithLeaderElection(ctx context.Context, cfg lease.Config, c *Controller, beside func(context.Context) error) error {
	cfg.Name = LeaseName
	clock := lease.NewClock(lease.NewLock(cfg))
	cfg.Lock = clock
	f := newFence(clock, cfg.Timings.RenewDeadline, c.cfg.Metrics)
	c.mgr = fencedActions{Actions: c.mgr, fence: f}
	if beside == nil {
		return lease.Run(ctx, cfg, c.Run)
	}
	return lease.Run(ctx, cfg, func(ctx context.Context) error {
		g := lifecycle.NewGroup()
		g.Add("executor", lifecycle.Background(c.Run))
		g.Add("beside the executor", lifecycle.Background(func(ctx context.Context) error {
			return beside(lease.WithFence(ctx, f.lease))
		}))
		return g.Run(ctx, func() {})
	})
}
