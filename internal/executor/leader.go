package executor

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaseName is the Lease replicas compete for.
const LeaseName = "taskactions-executor"

// A replica that stops renewing loses the Lease to another after
// leaseDuration; it stops writing after renewDeadline, a margin before.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
)

// RunWithLeaderElection runs the executor only while this replica holds the
// Lease <namespace>/taskactions-executor (coordination.k8s.io), so that of
// several replicas on one cluster exactly one executes. It needs the
// coordination API, which the embedded control plane does not serve (and
// does not need: its data-dir lock admits one process). A replica that
// loses the lease stops executing and stands for election again. It
// returns when ctx ends (nil), or with the executor's error when the
// executor fails while leading: the owner stops the server then.
func RunWithLeaderElection(ctx context.Context, kube kubernetes.Interface, namespace, identity string, c *Controller, log zerolog.Logger) error {
	lock := &leaseClock{Interface: &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: LeaseName, Namespace: namespace},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}}
	// Every write of the executor is fenced by the Lease (fence.go).
	c.mgr = fencedActions{Actions: c.mgr, fence: newFence(lock, renewDeadline, c.cfg.Metrics)}
	log.Info().Str("identity", identity).Str("lease", namespace+"/"+LeaseName).Msg("executor: standing for election")
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   leaseDuration,
			RenewDeadline:   renewDeadline,
			RetryPeriod:     2 * time.Second,
			ReleaseOnCancel: true,
			Name:            LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					log.Info().Str("identity", identity).Msg("leading: executor runs here")
					if err := c.Run(ctx); err != nil {
						fail(err)
					}
				},
				OnStoppedLeading: func() { log.Info().Str("identity", identity).Msg("not leading: executor stopped") },
				OnNewLeader: func(id string) {
					if id != identity {
						log.Info().Str("leader", id).Msg("executor runs on another replica")
					}
				},
			},
		})
	}
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
