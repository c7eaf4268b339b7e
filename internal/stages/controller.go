package stages

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kargorules "taskactions/internal/kargo"
	"taskactions/internal/pipeline"
)

// Controller keeps Stage statuses as Kargo's Stage controller does, for
// the states that exist without Promotions (internal/kargo.Reconcile): it
// handles refreshes, keeps the conditions, the freight summary and the
// observed generation. It runs on the embedded control plane, where no
// Kargo controller does; against a cluster it is off unless asked for,
// because Kargo's controller owns those statuses there.
type Controller struct {
	m       *Manager
	workers int
	log     zerolog.Logger
	now     func() time.Time
}

// NewController returns a Stage controller over the manager's cache.
func NewController(m *Manager, workers int, log zerolog.Logger) *Controller {
	return &Controller{m: m, workers: max(workers, 1), log: log, now: time.Now}
}

// Run reconciles every Stage that is added or changes until ctx ends.
// The manager must be started.
func (c *Controller) Run(ctx context.Context) error {
	inf := c.m.stages.Informer()
	if inf == nil {
		return fmt.Errorf("stage controller: %w", errNotStarted)
	}
	k := pipeline.NewKeyQueue("stage-controller", c.workers, c.log)
	return k.Run(ctx, inf, cache.ResourceEventHandlerFuncs{
		AddFunc:    k.Add,
		UpdateFunc: func(_, obj any) { k.Add(obj) },
	}, c.reconcile)
}

// reconcile writes the status Kargo's rules give the cached Stage, if it
// differs. A conflict means a newer version is on its way: its event
// queues the Stage again.
func (c *Controller) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	s, err := c.m.stages.Get(ns, name)
	if err != nil || s == nil || s.DeletionTimestamp != nil {
		return err
	}
	status, changed := kargorules.Reconcile(s, metav1.NewTime(c.now().Truncate(time.Second)))
	if !changed {
		return nil
	}
	next := s.DeepCopy()
	next.Status = status
	out, err := c.m.client.KargoV1alpha1().Stages(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("update status of Stage %s: %w", key, err)
	}
	c.m.stages.Wrote(out)
	return nil
}

var errNotStarted = fmt.Errorf("the Stage cache is not started")
