package taskactions

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
	flyteinformers "taskactions/internal/kube/informers/externalversions"
)

// Indexes of the informer cache.
const (
	indexID       = "id"       // project/domain/run/action
	indexUID      = "uid"      // metadata.uid
	indexOwner    = "owner"    // the UIDs of its owners
	indexRun      = "run"      // project/domain/run
	indexParent   = "parent"   // project/domain/run/parent
	indexCacheKey = "cacheKey" // project/domain/cacheKey
)

func runIndexKey(p, d, r string) string { return p + "/" + d + "/" + r }

// idKey is an action's identity as an index key; the parent index is
// keyed by the parent's.
func idKey(p, d, r, a string) string     { return p + "/" + d + "/" + r + "/" + a }
func runTopic(p, d, r string) string     { return "run/" + runIndexKey(p, d, r) }
func nodeTopic(p, d, r, a string) string { return "node/" + idKey(p, d, r, a) }
func specParent(s *v1.TaskActionSpec) string {
	if s.ParentActionName == nil {
		return ""
	}
	return *s.ParentActionName
}

var indexers = cache.Indexers{
	indexUID: func(obj any) ([]string, error) {
		return []string{string(obj.(*v1.TaskAction).UID)}, nil
	},
	indexOwner: ownerUIDs,
	indexID: func(obj any) ([]string, error) {
		s := &obj.(*v1.TaskAction).Spec
		return []string{idKey(s.Project, s.Domain, s.RunName, s.ActionName)}, nil
	},
	indexRun: func(obj any) ([]string, error) {
		s := &obj.(*v1.TaskAction).Spec
		return []string{runIndexKey(s.Project, s.Domain, s.RunName)}, nil
	},
	indexParent: func(obj any) ([]string, error) {
		s := &obj.(*v1.TaskAction).Spec
		if p := specParent(s); p != "" {
			return []string{idKey(s.Project, s.Domain, s.RunName, p)}, nil
		}
		return nil, nil
	},
	indexCacheKey: func(obj any) ([]string, error) {
		s := &obj.(*v1.TaskAction).Spec
		if s.CacheKey != "" {
			return []string{s.Project + "/" + s.Domain + "/" + s.CacheKey}, nil
		}
		return nil, nil
	},
}

// setupInformer builds the shared informer over all namespaces, with the
// run and parent indexes and the event handler. Managed fields are dropped
// on the way in: they are a large share of each object and nobody here
// reads them.
func (m *Manager) setupInformer(w *watchState) error {
	w.factory = flyteinformers.NewSharedInformerFactory(m.client, 0)
	w.informer = w.factory.Flyte().V1().TaskActions().Informer()
	if err := w.informer.AddIndexers(indexers); err != nil {
		return err
	}
	if err := w.informer.SetTransform(func(obj any) (any, error) {
		if o, ok := obj.(metav1.Object); ok {
			o.SetManagedFields(nil)
		}
		return obj, nil
	}); err != nil {
		return err
	}
	w.queues = make([]chan workItem, m.cfg.Workers)
	for i := range w.queues {
		w.queues[i] = make(chan workItem, m.cfg.WorkerQueue)
	}
	reg, err := w.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			m.handleWatchEvent(w, watch.Event{Type: watch.Added, Object: obj.(*v1.TaskAction)}, nil, initial)
		},
		UpdateFunc: func(oldObj, obj any) {
			old := oldObj.(*v1.TaskAction)
			if old.ResourceVersion == obj.(*v1.TaskAction).ResourceVersion {
				return // a re-list found nothing new
			}
			m.handleWatchEvent(w, watch.Event{Type: watch.Modified, Object: obj.(*v1.TaskAction)}, old, false)
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if ta, ok := obj.(*v1.TaskAction); ok {
				m.handleWatchEvent(w, watch.Event{Type: watch.Deleted, Object: ta}, ta, false)
			}
		},
	})
	if err != nil {
		return err
	}
	w.handler = reg
	return nil
}

// handleWatchEvent is the informer's handler, called on one goroutine in
// resource-version order. It publishes the update to stream subscribers
// (here, not in the workers, because stream cursors need this global order)
// and dispatches the event to the worker owning the object. old is the
// state the event replaces (nil for an add; the object itself for a
// delete).
func (m *Manager) handleWatchEvent(w *watchState, ev watch.Event, old *v1.TaskAction, initial bool) {
	ta := ev.Object.(*v1.TaskAction)
	if ev.Type == watch.Deleted {
		m.lists.update(old, nil)
	} else {
		m.lists.update(old, ta)
	}
	u := updateOf(ta, ev.Type == watch.Deleted)
	prev := m.views.update(ta, u)
	if ev.Type != watch.Deleted {
		m.owners.saw(ta.Namespace, ta.Spec.Project, ta.Spec.Domain)
	}
	rv := resourceVersion(ta)
	// The initial list is the state before the journal's floor, not events
	// after it: snapshots serve it. A write that changed nothing a client
	// sees (a finalizer, the terminal-recorded label) is no event.
	if !initial {
		if prev == nil || !prev.sameView(u) {
			m.dispatchEvent(u, rv)
		}
		m.written.advance(rv)
	}
	item := workItem{eventType: ev.Type, ta: ta, update: u}
	select {
	case w.queues[shardOf(keyOf(ta.Namespace, ta.Name), len(w.queues))] <- item:
	case <-w.ctx.Done(): // stopping: the workers may be gone
	}
}

// dispatchEvent publishes an update to the subscribers of the action's run,
// of its parent and of itself.
func (m *Manager) dispatchEvent(u *ActionUpdate, rv uint64) {
	id := u.ID
	topics := []string{runTopic(id.Project, id.Domain, id.Run), nodeTopic(id.Project, id.Domain, id.Run, id.Name)}
	if u.Parent != "" {
		topics = append(topics, nodeTopic(id.Project, id.Domain, id.Run, u.Parent))
	}
	m.journal.Publish(journalEntry(u, rv, topics))
	m.published.Add(1)
}

// listKeys are the cached lists an event about an action with spec s
// changes: its run's, and its parent's children.
func listKeys(s *v1.TaskActionSpec) []string {
	keys := []string{indexRun + "|" + runIndexKey(s.Project, s.Domain, s.RunName)}
	if p := specParent(s); p != "" {
		keys = append(keys, indexParent+"|"+idKey(s.Project, s.Domain, s.RunName, p))
	}
	if s.CacheKey != "" {
		keys = append(keys, indexCacheKey+"|"+s.Project+"/"+s.Domain+"/"+s.CacheKey)
	}
	return keys
}

func parseRV(s string) uint64 {
	rv, _ := strconv.ParseUint(s, 10, 64)
	return rv
}
