package taskactions

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
	"taskactions/internal/journal"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/pipeline"
)

// Indexes of the informer cache.
const (
	indexID       = "id"       // project/domain/run/action
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

// ownerUIDs indexes an action by the UIDs of its owners.
func ownerUIDs(obj any) ([]string, error) {
	refs := obj.(metav1.Object).GetOwnerReferences()
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = string(r.UID)
	}
	return out, nil
}

func specParent(s *v1.TaskActionSpec) string {
	if s.ParentActionName == nil {
		return ""
	}
	return *s.ParentActionName
}

var indexers = cache.Indexers{
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

// actionKind describes TaskActions to the pipeline: the indexes above,
// the lists of a run and of a parent's children (oldest first), the view
// clients see, the stream topics of an event (its run, its parent,
// itself), and what each event is handed to once published: the
// namespaces' owners, then onEvent.
func actionKind(client versioned.Interface, stored Stored, j journal.Config, owners *namespaceOwners, onEvent func(Event)) pipeline.Kind[*v1.TaskAction, *ActionUpdate] {
	var lw cache.ListerWatcher
	if client != nil { // nil only in benchmarks that feed events by hand
		lw = cache.NewListWatchFromClient(client.FlyteV1().RESTClient(), "taskactions", metav1.NamespaceAll, fields.Everything())
		if stored != nil {
			lw = storedLists(lw, stored)
		}
	}
	return pipeline.Kind[*v1.TaskAction, *ActionUpdate]{
		Name:      "TaskAction",
		ListWatch: lw,
		Example:   &v1.TaskAction{},
		Indexers:  indexers,
		Compact:   compact,
		Lists:     func(ta *v1.TaskAction) []string { return listKeys(&ta.Spec) },
		Compare:   listOrder,
		Sort:      sortByAge,
		View:      updateOf,
		Same:      (*ActionUpdate).sameView,
		Brief:     brief,
		Topics:    actionTopics,
		// Called on the informer's one goroutine, which feeds every
		// stream: neither may block.
		Handle: func(ev Event) {
			if ev.Type != watch.Deleted {
				owners.saw(ev.Object.Namespace, ev.Object.Spec.Project, ev.Object.Spec.Domain)
			}
			if onEvent != nil {
				onEvent(ev)
			}
		},
		Journal: j,
	}
}

// actionTopics: an event goes to the subscribers of the action's run, of
// its parent and of itself.
func actionTopics(_ *v1.TaskAction, u *ActionUpdate) []string {
	id := u.ID
	topics := []string{runTopic(id.Project, id.Domain, id.Run), nodeTopic(id.Project, id.Domain, id.Run, id.Name)}
	if u.Parent != "" {
		topics = append(topics, nodeTopic(id.Project, id.Domain, id.Run, u.Parent))
	}
	return topics
}

// listKeys are the cached lists an event about an action with spec s
// changes: its run's, and its parent's children.
func listKeys(s *v1.TaskActionSpec) []string {
	keys := []string{pipeline.ListKey(indexRun, runIndexKey(s.Project, s.Domain, s.RunName))}
	if p := specParent(s); p != "" {
		keys = append(keys, pipeline.ListKey(indexParent, idKey(s.Project, s.Domain, s.RunName, p)))
	}
	if s.CacheKey != "" {
		keys = append(keys, pipeline.ListKey(indexCacheKey, s.Project+"/"+s.Domain+"/"+s.CacheKey))
	}
	return keys
}
