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
// (rules.ReconcileStage): it handles refreshes, keeps the
// conditions, Kargo's queue of Promotions (currentPromotion, lastPromotion
// and the Freight history), health and verification (through
// AnalysisRuns, where they are served), the freight summary
// and the observed generation, and has the Freight manager record where
// Freight is and where it was verified. Where a project's ProjectConfig
// says so, it auto-promotes (autopromote.go). It runs on the embedded
// control plane, where no Kargo controller does; against a cluster it is
// off unless asked for, because Kargo's controller owns those statuses
// there.
type Controller struct {
	m          *Manager
	promotions Promotions
	freight    Freight
	configs    ProjectConfigs
	verify     Verifications
	workers    int
	log        zerolog.Logger
	now        func() time.Time
}

// ControllerConfig holds a Controller's dependencies; the interfaces may
// be nil: then the kind they read is not served (no Promotions, Freight,
// ProjectConfigs or AnalysisRuns). Without the first three there is no
// auto-promotion; without Verifications a Stage's spec.verification
// errors as in Kargo without its Rollouts integration.
type ControllerConfig struct {
	Promotions    Promotions
	Freight       Freight
	Configs       ProjectConfigs
	Verifications Verifications
	Workers       int // at least 1
	Log           zerolog.Logger
}

// Verifications start and follow the Stages' verifications.
type Verifications interface {
	// For is the rules' Verifier for one reconciliation.
	For(ctx context.Context) rules.Verifier
	// RunInformer is the informer of AnalysisRuns: a Stage is looked at
	// again when one labelled with its name changes.
	RunInformer() cache.SharedIndexInformer
}

// Promotions is what the controller reads of Promotions (a Stage's status
// follows its Promotions) and the Promotions it creates (auto-promotion).
type Promotions interface {
	ForStage(project, stage string) []*kargoapi.Promotion
	PromotionInformer() cache.SharedIndexInformer
	// CatchUp waits until the cache has the Promotions this server
	// created, so that one is not created twice.
	CatchUp(ctx context.Context)
	// AutoPromote creates a Promotion of freight to s as Kargo's
	// controller does: built from the Stage, with no actor.
	AutoPromote(ctx context.Context, s *kargoapi.Stage, freight string) (*kargoapi.Promotion, error)
}

// Freight is what the controller writes of Freight (where it is, and
// where it was verified, which makes it available downstream) and reads
// (what may be auto-promoted).
type Freight interface {
	Sync(ctx context.Context, s *kargoapi.Stage, now time.Time) error
	InProject(project string) ([]*kargoapi.Freight, error)
	FreightInformer() cache.SharedIndexInformer
}

// ProjectConfigs is what the controller reads of ProjectConfigs: whether
// a project auto-promotes its Stages.
type ProjectConfigs interface {
	Cached(project string) (*kargoapi.ProjectConfig, error)
	Informer() cache.SharedIndexInformer
}

// NewController returns a Stage controller over the manager's cache.
func NewController(m *Manager, cfg ControllerConfig) *Controller {
	return &Controller{
		m: m, promotions: cfg.Promotions, freight: cfg.Freight, configs: cfg.Configs, verify: cfg.Verifications,
		workers: max(cfg.Workers, 1), log: cfg.Log, now: time.Now,
	}
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
	if c.promotions != nil {
		remove, err := c.wakeForPromotions(k)
		if err != nil {
			return err
		}
		defer remove()
	}
	if c.verify != nil {
		remove, err := wakeOn(c.verify.RunInformer(), labelled(k))
		if err != nil {
			return err
		}
		defer remove()
	}
	if c.autoPromotes() {
		remove, err := c.wakeForAutoPromotion(k)
		if err != nil {
			return err
		}
		defer remove()
	}
	return k.Run(ctx, ready, inf, cache.ResourceEventHandlerFuncs{
		AddFunc:    k.Add,
		UpdateFunc: func(_, obj any) { k.Add(obj) },
	}, func(ctx context.Context, key string) error {
		again, err := c.reconcile(ctx, key)
		if again > 0 {
			k.AddAfter(key, again)
		}
		return err
	})
}

// wakeForPromotions queues a Stage when one of its Promotions changes,
// and returns what stops it.
func (c *Controller) wakeForPromotions(k *pipeline.KeyQueue) (func(), error) {
	stageOf := func(obj any) {
		if key, ok := stageKeyOf(obj); ok {
			k.AddKey(key)
		}
	}
	return wakeOn(c.promotions.PromotionInformer(), cache.ResourceEventHandlerFuncs{
		AddFunc: stageOf, UpdateFunc: func(_, obj any) { stageOf(obj) }, DeleteFunc: stageOf,
	})
}

// wakeOn adds handler to inf and returns what removes it.
func wakeOn(inf cache.SharedIndexInformer, handler cache.ResourceEventHandler) (func(), error) {
	reg, err := inf.AddEventHandler(handler)
	if err != nil {
		return nil, err
	}
	return func() { _ = inf.RemoveEventHandler(reg) }, nil
}

// reconcile writes the status Kargo's rules give the cached Stage, if it
// differs, then records it on Freight and auto-promotes, as Kargo's
// controller does in that order. A conflict means a newer version is on
// its way: its event queues the Stage again. It returns when to look
// again, if no event will say (a soak ends).
func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	s, err := c.m.stages.Get(ns, name)
	if err != nil || s == nil || s.DeletionTimestamp != nil {
		return 0, err
	}
	var promos []*kargoapi.Promotion
	if c.promotions != nil {
		promos = c.promotions.ForStage(ns, name)
	}
	in := rules.Inputs{Promotions: promos}
	if c.verify != nil {
		in.Verifier = c.verify.For(ctx)
	}
	if next := statusUpdate(s, in, c.now()); next != nil {
		out, err := c.m.client.KargoV1alpha1().Stages(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		switch {
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			return 0, nil
		case err != nil:
			return 0, fmt.Errorf("update status of Stage %s: %w", key, err)
		}
		c.m.stages.Wrote(out)
		s = out
	}
	if err := c.syncFreight(ctx, s); err != nil {
		return 0, err
	}
	return c.autoPromote(ctx, s)
}

// labelled queues the Stage an object names in Kargo's stage label (an
// AnalysisRun that verifies it).
func labelled(k *pipeline.KeyQueue) cache.ResourceEventHandler {
	add := func(obj any) {
		if o, ok := pipeline.Deleted[metav1.Object](obj); ok && o.GetLabels()[kargoapi.LabelKeyStage] != "" {
			k.AddKey(o.GetNamespace() + "/" + o.GetLabels()[kargoapi.LabelKeyStage])
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }, DeleteFunc: add}
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

// statusUpdate is s with the status Kargo's rules give it at now with
// in, or nil when that is the status it has. Times are in whole seconds,
// as the API stores them: a status read back then equals the one
// computed.
func statusUpdate(s *kargoapi.Stage, in rules.Inputs, now time.Time) *kargoapi.Stage {
	status, changed := rules.ReconcileStage(s, in, metav1.NewTime(now.Truncate(time.Second)))
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
