// Package collector is the garbage collector the embedded control plane
// lacks, for TaskActions alone: an action whose owner (an ownerReference,
// which the action manager sets on every child) no longer exists is
// deleted, as Kubernetes' collector does on a cluster. Deleting a parent,
// the way Flyte aborts, so deletes its descendants, level by level. It is
// a pipeline.KeyQueue controller that works from the objects, so a restart
// in the middle finishes the job. Run it only where there is no garbage
// collector.
package collector

import (
	"context"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
	"taskactions/internal/pipeline"
)

// Actions is what the collector needs of the action manager.
type Actions interface {
	// Informer is the shared TaskAction informer (the manager must be
	// watching).
	Informer() cache.SharedIndexInformer
	// Owned are the cached actions that name the uid as an owner.
	Owned(uid types.UID) []*v1.TaskAction
	// DeleteObject deletes the object of that uid (gone already is no error).
	DeleteObject(ctx context.Context, ta *v1.TaskAction) error
}

// Collector is the controller; Run runs it.
type Collector struct {
	actions Actions
	workers int
	log     zerolog.Logger
}

// New returns a collector over the manager's informer (default 4 workers).
func New(actions Actions, workers int, log zerolog.Logger) *Collector {
	if workers <= 0 {
		workers = 4
	}
	return &Collector{actions: actions, workers: workers, log: log}
}

// Run collects until ctx ends. The manager must be watching.
func (c *Collector) Run(ctx context.Context, ready func()) error {
	k := pipeline.NewKeyQueue("collector", c.workers, c.log)
	inf := c.actions.Informer()
	idx := inf.GetIndexer()
	return k.Run(ctx, ready, inf, cache.ResourceEventHandlerFuncs{
		// A new or restored child: is its owner there?
		AddFunc: func(obj any) {
			if len(obj.(*v1.TaskAction).OwnerReferences) > 0 {
				k.Add(obj)
			}
		},
		// A deleted action: its children are next.
		DeleteFunc: func(obj any) {
			if ta, ok := pipeline.Deleted[*v1.TaskAction](obj); ok {
				for _, o := range c.actions.Owned(ta.UID) {
					k.Add(o)
				}
			}
		},
	}, func(ctx context.Context, key string) error {
		obj, exists, err := idx.GetByKey(key)
		if err != nil || !exists || !orphaned(obj.(*v1.TaskAction), idx) {
			return err
		}
		return c.actions.DeleteObject(ctx, obj.(*v1.TaskAction))
	})
}

// orphaned: every owner the action names is gone (as the garbage
// collector decides: an object with other owners left stays). An owner is
// in the action's namespace, under the reference's name and with its uid
// (another object of that name is not it).
func orphaned(ta *v1.TaskAction, idx cache.Indexer) bool {
	if len(ta.OwnerReferences) == 0 || ta.DeletionTimestamp != nil {
		return false
	}
	for _, ref := range ta.OwnerReferences {
		owner, ok, _ := idx.GetByKey(ta.Namespace + "/" + ref.Name)
		if ok && owner.(*v1.TaskAction).UID == ref.UID {
			return false
		}
	}
	return true
}
