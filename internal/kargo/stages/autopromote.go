package stages

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// Auto-promotion, as Kargo v1.6.3's Stage controller does it: the
// decision is rules.AutoPromotions'; here is its I/O, and what wakes a
// Stage for it besides its own changes and its Promotions': a change of
// its project's ProjectConfig, and new Freight (or Freight newly verified
// or approved) of an origin it requests.

// autoPromotes: the controller has what auto-promotion needs.
func (c *Controller) autoPromotes() bool {
	return c.promotions != nil && c.freight != nil && c.configs != nil
}

// autoPromote creates the Promotions rules.AutoPromotions decides on for
// s, and returns when to look again (a soak ends), if ever.
func (c *Controller) autoPromote(ctx context.Context, s *kargoapi.Stage) (time.Duration, error) {
	if !c.autoPromotes() {
		return 0, nil
	}
	cfg, err := c.configs.Cached(s.Namespace)
	if err != nil || cfg == nil {
		return 0, err
	}
	// A Promotion this controller just created must be seen, or a second
	// reconcile would create another.
	c.promotions.CatchUp(ctx)
	freight, err := c.freight.InProject(s.Namespace)
	if err != nil {
		return 0, err
	}
	plan, err := rules.AutoPromotions(s, cfg, freight, c.promotions.ForStage(s.Namespace, s.Name))
	if err != nil {
		return 0, fmt.Errorf("failed to auto-promote Freight: %w", err)
	}
	for _, ap := range plan.Promote {
		p, err := c.promotions.AutoPromote(ctx, s, ap.Freight)
		if err != nil {
			return 0, fmt.Errorf("failed to auto-promote Freight: error creating Promotion for Freight %q in namespace %q: %w",
				ap.Freight, s.Namespace, err)
		}
		// Kargo records this as an event of the Promotion; the embedded
		// control plane has no Events, so it is logged.
		c.log.Info().Str("project", s.Namespace).Str("promotion", p.Name).
			Msgf("Automatically promoted Freight from origin %q for Stage %q", ap.Origin, s.Name)
	}
	return plan.Recheck, nil
}

// wakeForAutoPromotion queues the Stages a ProjectConfig or Freight event
// may make promotable, and returns what stops it.
func (c *Controller) wakeForAutoPromotion(k *pipeline.KeyQueue) (func(), error) {
	every := func(*kargoapi.Stage) bool { return true }
	project := func(obj any) { c.wake(k, projectOf(obj), every) }
	removeConfigs, err := wakeOn(c.configs.Informer(), cache.ResourceEventHandlerFuncs{
		AddFunc: project, UpdateFunc: func(_, obj any) { project(obj) }, DeleteFunc: project,
	})
	if err != nil {
		return nil, err
	}
	requesters := func(obj any) {
		if f, ok := obj.(*kargoapi.Freight); ok {
			c.wake(k, f.Namespace, func(s *kargoapi.Stage) bool { return requests(s, f.Origin) })
		}
	}
	removeFreight, err := wakeOn(c.freight.FreightInformer(), cache.ResourceEventHandlerFuncs{
		AddFunc: requesters,
		UpdateFunc: func(old, obj any) {
			if availabilityChanged(old, obj) {
				requesters(obj)
			}
		},
	})
	if err != nil {
		removeConfigs()
		return nil, err
	}
	return func() { removeConfigs(); removeFreight() }, nil
}

// wake queues the Stages of a project that which selects.
func (c *Controller) wake(k *pipeline.KeyQueue, project string, which func(*kargoapi.Stage) bool) {
	if project == "" {
		return
	}
	stages, err := c.m.stages.ByIndex(pipeline.IndexNamespace, project)
	if err != nil {
		c.log.Warn().Err(err).Str("project", project).Msg("stage controller: cannot list the project's Stages to wake them")
		return
	}
	for _, s := range stages {
		if which(s) {
			k.Add(s)
		}
	}
}

// projectOf is the project (namespace) of an object, or of its tombstone.
func projectOf(obj any) string {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return ""
	}
	ns, _, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return ""
	}
	return ns
}

// requests: s requests Freight of origin.
func requests(s *kargoapi.Stage, origin kargoapi.FreightOrigin) bool {
	for _, r := range s.Spec.RequestedFreight {
		if r.Origin.Equals(&origin) {
			return true
		}
	}
	return false
}

// availabilityChanged: a Freight update changed where it is verified or
// what it is approved for, which is what makes Freight available
// downstream. (Its artifacts never change.)
func availabilityChanged(old, obj any) bool {
	o, ok1 := old.(*kargoapi.Freight)
	n, ok2 := obj.(*kargoapi.Freight)
	return ok1 && ok2 && (!equality.Semantic.DeepEqual(o.Status.VerifiedIn, n.Status.VerifiedIn) ||
		!equality.Semantic.DeepEqual(o.Status.ApprovedFor, n.Status.ApprovedFor))
}
