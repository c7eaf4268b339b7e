package executor

import (
	"context"

	"taskactions/internal/lease"
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
func RunWithLeaderElection(ctx context.Context, cfg lease.Config, c *Controller) error {
	cfg.Name = LeaseName
	clock := lease.NewClock(lease.NewLock(cfg))
	cfg.Lock = clock
	c.mgr = fencedActions{Actions: c.mgr, fence: newFence(clock, cfg.Timings.RenewDeadline, c.cfg.Metrics)}
	return lease.Run(ctx, cfg, c.Run)
}
