package taskactions

import (
	"context"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
	"taskactions/internal/pipeline"
)

// Collector is the garbage collector the embedded control plane lacks, for
// TaskActions alone: an action whose owner (an ownerReference, which this
// server sets on every child) no longer exists is deleted, as Kubernetes'
// collector does on a cluster. Deleting a parent, the way Flyte aborts,
// so deletes its descendants, level by level. It works from the objects,
// so a restart in the middle finishes the job. Run it only where there is
// no garbage collector.
type Collector struct {
	m       *Manager
	workers int
	log     zerolog.Logger
}

// NewCollector returns a collector over m's informer (default 4 workers).
func NewCollector(m *Manager, workers int, log zerolog.Logger) *Collector {
	if workers <= 0 {
		workers = 4
	}
	return &Collector{m: m, workers: workers, log: log}
}

// Run collects until ctx ends. The manager must be watching.
func (c *Collector) Run(ctx context.Context) error {
	k := pipeline.NewKeyQueue("collector", c.workers, c.log)
	idx := c.m.Informer().GetIndexer()
	return k.Run(ctx, c.m.Informer(), cache.ResourceEventHandlerFuncs{
		// A new or restored child: is its owner there?
		AddFunc: func(obj any) {
			if len(obj.(*v1.TaskAction).OwnerReferences) > 0 {
				k.Add(obj)
			}
		},
		// A deleted action: its children are next.
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if ta, ok := obj.(*v1.TaskAction); ok {
				owned, _ := idx.ByIndex(indexOwner, string(ta.UID))
				for _, o := range owned {
					k.Add(o)
				}
			}
		},
	}, func(ctx context.Context, key string) error {
		obj, exists, err := idx.GetByKey(key)
		if err != nil || !exists || !orphaned(obj.(*v1.TaskAction), idx) {
			return err
		}
		return c.m.deleteObject(ctx, obj.(*v1.TaskAction))
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

// ownerUIDs indexes an action by the UIDs of its owners.
func ownerUIDs(obj any) ([]string, error) {
	refs := obj.(metav1.Object).GetOwnerReferences()
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = string(r.UID)
	}
	return out, nil
}
