package warehouses

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/credentials"
	"taskactions/internal/kargo/git"
	"taskactions/internal/pipeline"
)

// Controller discovers the artifacts of Warehouses and makes Freight of
// the newest, as Kargo's Warehouse controller does: on every change, on a
// refresh, and every spec.interval. It reaches whatever repository a
// Warehouse names (as git-clone does): each poll is logged with its URL.
type Controller struct {
	m       *Manager
	freight FreightStore
	creds   credentials.Database
	git     gitSource
	log     zerolog.Logger
	now     func() time.Time
}

// FreightStore is what the controller needs of Freight.
type FreightStore interface {
	Get(ctx context.Context, project, nameOrAlias string) (*pipeline.ObjectView[*kargoapi.Freight], error)
	Create(ctx context.Context, project string, f *kargoapi.Freight) (*pipeline.ObjectView[*kargoapi.Freight], error)
}

// ControllerConfig holds the controller's dependencies.
type ControllerConfig struct {
	Freight FreightStore
	// Credentials finds a repository's credentials (none when nil).
	Credentials credentials.Database
	// AllowLocalRepos lets Git subscriptions name file:// URLs and local
	// paths, as the promotion steps' flag does.
	AllowLocalRepos bool
	// WorkDir is where Git discovery makes its clones (removed after each).
	WorkDir string
	Log     zerolog.Logger
}

// NewController returns a Warehouse controller over the manager's cache.
func NewController(m *Manager, cfg ControllerConfig) *Controller {
	return &Controller{
		m: m, freight: cfg.Freight, creds: cfg.Credentials, log: cfg.Log, now: time.Now,
		git: gitSource{client: git.ClientOptions{AllowLocal: cfg.AllowLocalRepos}, baseDir: cfg.WorkDir},
	}
}

// Run reconciles Warehouses until ctx ends. The manager must be started.
func (c *Controller) Run(ctx context.Context, ready func()) error {
	inf := c.m.warehouses.Informer()
	if inf == nil {
		return errors.New("warehouse controller: the Warehouse cache is not started")
	}
	if c.git.baseDir != "" {
		if err := os.MkdirAll(c.git.baseDir, 0o700); err != nil {
			return fmt.Errorf("warehouse controller: %w", err)
		}
	}
	k := pipeline.NewKeyQueue("warehouse-controller", 2, c.log)
	return k.Run(ctx, ready, inf, cache.ResourceEventHandlerFuncs{
		AddFunc: k.Add,
		UpdateFunc: func(old, obj any) {
			// Only a change of spec or a refresh is a reason to discover
			// now; the controller's own status writes are not.
			o, n := old.(*kargoapi.Warehouse), obj.(*kargoapi.Warehouse)
			if o.Generation != n.Generation || o.Annotations[kargoapi.AnnotationKeyRefresh] != n.Annotations[kargoapi.AnnotationKeyRefresh] {
				k.Add(obj)
			}
		},
	}, func(ctx context.Context, key string) error {
		next, err := c.reconcile(ctx, key)
		if next > 0 {
			k.AddAfter(key, next)
		}
		return err
	})
}

// reconcile discovers a Warehouse's artifacts, makes Freight of them when
// the policy is Automatic and they are new, and writes the status with
// Kargo's conditions. It returns when to poll again.
func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	w, err := c.m.warehouses.Get(ns, name)
	if err != nil || w == nil || w.DeletionTimestamp != nil {
		return 0, err
	}
	next := w.DeepCopy()
	next.Status.ObservedGeneration = w.Generation
	next.Status.LastHandledRefresh = w.Annotations[kargoapi.AnnotationKeyRefresh]
	c.sync(ctx, w, &next.Status)
	if err := c.writeStatus(ctx, w, next); err != nil {
		return 0, err
	}
	return max(w.Spec.Interval.Duration, time.Second), nil
}

// sync is one discovery and its Freight, told in status. A failure is
// the Warehouse's to show, not the queue's to retry: the next poll is the
// retry, so an unreachable repository is not hammered.
func (c *Controller) sync(ctx context.Context, w *kargoapi.Warehouse, status *kargoapi.WarehouseStatus) {
	gen := w.Generation
	set := func(cs ...metav1.Condition) {
		for _, cond := range cs {
			meta.SetStatusCondition(&status.Conditions, cond)
		}
	}
	arts, err := c.discover(ctx, w)
	if err != nil {
		c.log.Warn().Str("warehouse", w.Namespace+"/"+w.Name).Err(err).Msg("discovery failed")
		set(metav1.Condition{Type: kargoapi.ConditionTypeHealthy, Status: metav1.ConditionFalse, Reason: "DiscoveryFailed",
			Message: "Unable to discover artifacts: " + err.Error(), ObservedGeneration: gen},
			metav1.Condition{Type: kargoapi.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "DiscoveryFailure",
				Message: "Artifact discovery failed: " + err.Error(), ObservedGeneration: gen})
		return
	}
	status.DiscoveredArtifacts = arts
	healthy, ready, ok := checkArtifacts(arts, gen)
	set(healthy, ready)
	if !ok || w.Spec.FreightCreationPolicy == kargoapi.FreightCreationPolicyManual {
		return
	}
	f, err := buildFreight(w.Name, arts)
	if err != nil {
		set(metav1.Condition{Type: kargoapi.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "FreightBuildFailure",
			Message: "Error building Freight from latest artifacts: " + err.Error(), ObservedGeneration: gen})
		return
	}
	if err := c.createFreight(ctx, w.Namespace, f); err != nil {
		set(metav1.Condition{Type: kargoapi.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "FreightCreationFailure",
			Message: fmt.Sprintf("Error creating Freight %q in namespace %q: %s", f.Name, w.Namespace, err), ObservedGeneration: gen})
		return
	}
	status.LastFreightID = f.Name
}

// createFreight creates f unless it exists (the same artifacts found
// again).
func (c *Controller) createFreight(ctx context.Context, project string, f *kargoapi.Freight) error {
	if _, err := c.freight.Get(ctx, project, f.Name); err == nil {
		return nil
	} else if !errors.Is(err, pipeline.ErrNotFound) {
		return err
	}
	_, err := c.freight.Create(ctx, project, f)
	if errors.Is(err, pipeline.ErrConflict) {
		return nil
	}
	return err
}

// writeStatus writes next's status if it differs from w's; a conflict
// means a newer version is on its way, whose event queues it again.
func (c *Controller) writeStatus(ctx context.Context, w, next *kargoapi.Warehouse) error {
	if equality.Semantic.DeepEqual(w.Status, next.Status) {
		return nil
	}
	out, err := c.m.client.KargoV1alpha1().Warehouses(w.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("update status of Warehouse %s/%s: %w", w.Namespace, w.Name, err)
	}
	c.m.warehouses.Wrote(out)
	return nil
}
