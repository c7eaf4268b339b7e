package warehouses

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// Controller discovers the artifacts of Warehouses and makes Freight of
// the newest, as Kargo's Warehouse controller does: on every change, on a
// refresh, and every spec.interval. Only image subscriptions are
// discovered so far; a Warehouse with another kind says so in its Ready
// condition. It reaches whatever registry a Warehouse names (as
// git-clone reaches any Git host): each poll is logged with its host.
type Controller struct {
	m       *Manager
	freight FreightStore
	log     zerolog.Logger
	now     func() time.Time
}

// FreightStore is what the controller needs of Freight.
type FreightStore interface {
	Get(ctx context.Context, project, nameOrAlias string) (*pipeline.ObjectView[*kargoapi.Freight], error)
	Create(ctx context.Context, project string, f *kargoapi.Freight) (*pipeline.ObjectView[*kargoapi.Freight], error)
}

// NewController returns a Warehouse controller over the manager's cache.
func NewController(m *Manager, freight FreightStore, log zerolog.Logger) *Controller {
	return &Controller{m: m, freight: freight, log: log, now: time.Now}
}

// Run reconciles Warehouses until ctx ends. The manager must be started.
func (c *Controller) Run(ctx context.Context, ready func()) error {
	inf := c.m.warehouses.Informer()
	if inf == nil {
		return errors.New("warehouse controller: the Warehouse cache is not started")
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
// the policy is Automatic and they are new, and writes the status. It
// returns when to poll again.
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
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Discovered", ObservedGeneration: w.Generation}
	arts, err := c.discover(ctx, w)
	if err != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "DiscoveryFailed", err.Error()
	} else {
		next.Status.DiscoveredArtifacts = arts
		if id, err := c.makeFreight(ctx, w, arts); err != nil {
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "FreightCreationFailed", err.Error()
		} else if id != "" {
			next.Status.LastFreightID = id
		}
	}
	meta.SetStatusCondition(&next.Status.Conditions, ready)
	if err := c.writeStatus(ctx, w, next); err != nil {
		return 0, err
	}
	return max(w.Spec.Interval.Duration, time.Second), nil
}

// discover runs each subscription's discovery.
func (c *Controller) discover(ctx context.Context, w *kargoapi.Warehouse) (*kargoapi.DiscoveredArtifacts, error) {
	arts := &kargoapi.DiscoveredArtifacts{DiscoveredAt: metav1.NewTime(c.now().Truncate(time.Second))}
	for i, sub := range w.Spec.Subscriptions {
		if sub.Image == nil {
			return nil, fmt.Errorf("subscription %d: only image subscriptions are discovered on this server yet", i)
		}
		c.log.Info().Str("warehouse", w.Namespace+"/"+w.Name).Str("repoURL", sub.Image.RepoURL).Msg("discovering images")
		res, err := discoverImages(ctx, *sub.Image)
		if err != nil {
			return nil, err
		}
		arts.Images = append(arts.Images, res)
	}
	return arts, nil
}

// makeFreight creates the Freight of the newest artifact of every
// subscription (Kargo's name: their hash), unless the policy is Manual,
// an artifact is missing, or it exists. It returns the Freight's name.
func (c *Controller) makeFreight(ctx context.Context, w *kargoapi.Warehouse, arts *kargoapi.DiscoveredArtifacts) (string, error) {
	if w.Spec.FreightCreationPolicy == kargoapi.FreightCreationPolicyManual {
		return "", nil
	}
	f := &kargoapi.Freight{Origin: kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: w.Name}}
	for _, r := range arts.Images {
		img, ok := newestImage(r)
		if !ok {
			return "", nil
		}
		f.Images = append(f.Images, img)
	}
	id := rules.GenerateFreightID(f)
	if _, err := c.freight.Get(ctx, w.Namespace, id); err == nil {
		return id, nil
	} else if !errors.Is(err, pipeline.ErrNotFound) {
		return "", err
	}
	out, err := c.freight.Create(ctx, w.Namespace, f)
	if err != nil {
		return "", fmt.Errorf("error creating Freight: %w", err)
	}
	return out.Object.Name, nil
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
