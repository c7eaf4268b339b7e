package taskactions

import (
	"context"
	"sync"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	v1 "taskactions/api/v1"
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
	// The queue holds each action key once: it is bounded by the actions.
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "collector"})
	inf := c.m.Informer()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// A new or restored child: is its owner there?
		AddFunc: func(obj any) {
			if ta := obj.(*v1.TaskAction); len(ta.OwnerReferences) > 0 {
				q.Add(keyOf(ta.Namespace, ta.Name))
			}
		},
		// A deleted action: its children are next.
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if ta, ok := obj.(*v1.TaskAction); ok {
				owned, _ := inf.GetIndexer().ByIndex(indexOwner, string(ta.UID))
				for _, o := range owned {
					child := o.(*v1.TaskAction)
					q.Add(keyOf(child.Namespace, child.Name))
				}
			}
		},
	})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for c.next(ctx, q, inf.GetIndexer()) {
			}
		})
	}
	<-ctx.Done()
	_ = inf.RemoveEventHandler(reg)
	q.ShutDown()
	wg.Wait()
	return nil
}

func (c *Collector) next(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], idx cache.Indexer) bool {
	key, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(key)
	obj, exists, err := idx.GetByKey(key)
	if err == nil && exists && orphaned(obj.(*v1.TaskAction), idx) {
		ta := obj.(*v1.TaskAction)
		err = c.m.deleteObject(ctx, ta)
		if err == nil {
			c.log.Debug().Str("action", key).Msg("deleted with its owner")
		}
	}
	if err != nil && ctx.Err() == nil {
		c.log.Warn().Err(err).Str("action", key).Msg("collecting failed; retrying")
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}

// orphaned: every owner the action names is gone (as the garbage
// collector decides: an object with other owners left stays).
func orphaned(ta *v1.TaskAction, idx cache.Indexer) bool {
	if len(ta.OwnerReferences) == 0 || ta.DeletionTimestamp != nil {
		return false
	}
	for _, ref := range ta.OwnerReferences {
		if owners, _ := idx.ByIndex(indexUID, string(ref.UID)); len(owners) > 0 {
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
