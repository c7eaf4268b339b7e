// Package lease runs work only while this replica holds a Lease
// (coordination.k8s.io), so that of several replicas on one cluster
// exactly one does it: the executor under one Lease, Kargo's controllers
// under another. It is client-go's leader election with the loop around
// it: a replica that loses the Lease stops the work and stands again, and
// the work's own failure ends the loop with its error.
package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Timings are the Lease's: a holder renews every RetryPeriod, stops its
// work RenewDeadline after its last renewal, and another replica takes
// the Lease once it saw it unrenewed for LeaseDuration.
type Timings struct {
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultTimings are client-go's and controller-runtime's defaults.
var DefaultTimings = Timings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}

// Validate refuses timings leader election cannot keep.
func (t Timings) Validate() error {
	switch {
	case t.RetryPeriod <= 0:
		return fmt.Errorf("the Lease's retry period must be positive")
	case t.RenewDeadline <= t.RetryPeriod:
		return fmt.Errorf("the Lease's renew deadline (%s) must be longer than its retry period (%s)", t.RenewDeadline, t.RetryPeriod)
	case t.LeaseDuration <= t.RenewDeadline:
		return fmt.Errorf("the Lease's duration (%s) must be longer than its renew deadline (%s)", t.LeaseDuration, t.RenewDeadline)
	}
	return nil
}

// Config names the Lease and the replica.
type Config struct {
	Kube            kubernetes.Interface
	Namespace, Name string
	Identity        string
	Timings         Timings
	// Work names what runs under the Lease, in the log ("executor").
	Work string
	Log  zerolog.Logger
	// Lock, when set, is the lock to hold (one that notes its renewals,
	// for a fence); else the Lease itself.
	Lock resourcelock.Interface
}

// NewLock is the Lease lock of the config.
func NewLock(cfg Config) resourcelock.Interface {
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: cfg.Name, Namespace: cfg.Namespace},
		Client:     cfg.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}
}

// Run runs lead while this replica holds the Lease, and stands for it
// again whenever it is lost, until ctx ends (nil) or lead fails (its
// error). On a stop the Lease is released, so the next replica takes it
// at its next retry instead of after the lease duration.
func Run(ctx context.Context, cfg Config, lead func(context.Context) error) error {
	lock := cfg.Lock
	if lock == nil {
		lock = NewLock(cfg)
	}
	where := cfg.Namespace + "/" + cfg.Name
	cfg.Log.Info().Str("identity", cfg.Identity).Str("lease", where).Msg(cfg.Work + ": standing for election")
	ctx, fail := context.WithCancelCause(ctx)
	defer fail(nil)
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   cfg.Timings.LeaseDuration,
			RenewDeadline:   cfg.Timings.RenewDeadline,
			RetryPeriod:     cfg.Timings.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            cfg.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					cfg.Log.Info().Str("identity", cfg.Identity).Str("lease", where).Msg("leading: " + cfg.Work + " runs here")
					if err := lead(ctx); err != nil {
						fail(err)
					}
				},
				OnStoppedLeading: func() {
					cfg.Log.Info().Str("identity", cfg.Identity).Str("lease", where).Msg("not leading: " + cfg.Work + " stopped")
				},
				OnNewLeader: func(id string) {
					if id != cfg.Identity {
						cfg.Log.Info().Str("leader", id).Str("lease", where).Msg(cfg.Work + " runs on another replica")
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
