package stages

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/failpoint"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// Controller keeps Stage statuses as Kargo's Stage controller does
// (rules.ReconcileWithPromotions): it handles refreshes, keeps the
// conditions, Kargo's queue of Promotions (currentPromotion, lastPromotion
// and the Freight history), health and verification, the freight summary
// and the observed generation, and has the Freight manager record where
// Freight is and where it was verified. It runs on the embedded control
// plane, where no Kargo controller does; against a cluster it is off
// unless asked for, because Kargo's controller owns those statuses there.
type Controller struct {
	m          *Manager
	promotions Promotions
	freight    Freight
	workers    int
	log        zerolog.Logger
	now        func() time.Time
}

// Promotions is what the controller reads of Promotions: a Stage's status
// follows its Promotions.
type Promotions interface {
	ForStage(project, stage string) []*kargoapi.Promotion
	PromotionInformer() cache.SharedIndexInformer
}

// Freight is what the controller writes of Freight: where it is, and
// where it was verified, which makes it available downstream.
type Freight interface {
	Sync(ctx context.Context, s *kargoapi.Stage, now time.Time) error
}

// NewController returns a Stage controller over the manager's cache;
// promotions and freight may be nil (no Promotions or Freight are served).
func NewController(m *Manager, promotions Promotions, freight Freight, workers int, log zerolog.Logger) *Controller {
	return &Controller{m: m, promotions: promotions, freight: freight, workers: max(workers, 1), log: log, now: time.Now}
}

// Run reconciles every Stage that is added or changes until ctx ends.
// The manager must be started.
func (c *Controller) Run(ctx context.Context, ready func()) error {
	inf := c.m.stages.Informer()
	if inf == nil {
		return fmt.Errorf("stage controller: %w", errNotStarted)
	}
	if failpoint.Armed(failpoint.StageControllerFails) {
		return errors.New("stage controller: cannot watch Promotions (failpoint)")
	}
	k := pipeline.NewKeyQueue("stage-controller", c.workers, c.log)
	if c.promotions != nil { // a Promotion's change is its Stage's
		stageOf := func(obj any) {
			if key, ok := stageKeyOf(obj); ok {
				k.AddKey(key)
			}
		}
		pinf := c.promotions.PromotionInformer()
		reg, err := pinf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: stageOf, UpdateFunc: func(_, obj any) { stageOf(obj) }, DeleteFunc: stageOf,
		})
		if err != nil {
			return err
		}
		defer func() { _ = pinf.RemoveEventHandler(reg) }()
	}
	return k.Run(ctx, ready, inf, cache.ResourceEventHandlerFuncs{
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
	var promos []*kargoapi.Promotion
	if c.promotions != nil {
		promos = c.promotions.ForStage(ns, name)
	}
	next := statusUpdate(s, promos, c.now())
	if next == nil {
		return c.syncFreight(ctx, s)
	}
	out, err := c.m.client.KargoV1alpha1().Stages(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("update status of Stage %s: %w", key, err)
	}
	c.m.stages.Wrote(out)
	return c.syncFreight(ctx, out)
}

// stageKeyOf is the key of the Stage a Promotion's event is about: a
// Promotion's change is its Stage's.
func stageKeyOf(obj any) (string, bool) {
	p, ok := obj.(*kargoapi.Promotion)
	if !ok {
		return "", false
	}
	return p.Namespace + "/" + p.Spec.Stage, true
}

// statusUpdate is s with the status Kargo's rules give it at now among
// its Promotions promos, or nil when that is the status it has. Times are
// in whole seconds, as the API stores them: a status read back then equals
// the one computed.
func statusUpdate(s *kargoapi.Stage, promos []*kargoapi.Promotion, now time.Time) *kargoapi.Stage {
	status, changed := rules.ReconcileWithPromotions(s, promos, metav1.NewTime(now.Truncate(time.Second)))
	if !changed {
		return nil
	}
	next := s.DeepCopy()
	next.Status = status
	return next
}

// syncFreight records on Freight where it is (Kargo's syncFreight, for
// soak times) and where it was verified (markFreightVerifiedForStage),
// which makes it available to the Stages downstream.
func (c *Controller) syncFreight(ctx context.Context, s *kargoapi.Stage) error {
	if c.freight == nil {
		return nil
	}
	return c.freight.Sync(ctx, s, c.now())
}

var errNotStarted = fmt.Errorf("the Stage cache is not started")
