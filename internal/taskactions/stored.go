package taskactions

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	goruntime "runtime"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
	"taskactions/internal/controlplane"
)

// Stored reads every TaskAction as the API server stored it, a page at a
// time, at one revision of its store, which it returns; each object is
// its JSON and its modification revision (its resourceVersion).
type Stored = controlplane.Stored

// storedListTimeout bounds one list from the store.
const storedListTimeout = 5 * time.Minute

// storedLists is lw whose lists read the store instead of asking the API
// server; its watches still go to the API server, from the revision the
// list was read at, which is a resourceVersion of the same etcd. The
// reflector is told not to ask a watch for the initial state instead
// (client-go's WatchList, on by default): that would move every object
// through the API server again.
func storedLists(lw cache.ListerWatcher, stored Stored) cache.ListerWatcher {
	return listsOnly{&cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			ctx, cancel := context.WithTimeout(context.Background(), storedListTimeout)
			defer cancel()
			return listStored(ctx, stored)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) { return lw.Watch(opts) },
	}}
}

// listsOnly is a ListerWatcher whose initial state comes from a list.
type listsOnly struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported keeps the reflector to lists
// (watchlist.DoesClientNotSupportWatchListSemantics).
func (listsOnly) IsWatchListSemanticsUnSupported() bool { return true }

// listStored is every stored TaskAction, as a list of the revision read.
// Each page is decoded on every core: a start's list is one decoding of
// every live object, and nothing else waits on it.
func listStored(ctx context.Context, stored Stored) (*v1.TaskActionList, error) {
	l := &v1.TaskActionList{}
	rev, err := stored(ctx, func(page []controlplane.StoredObject) error {
		base := len(l.Items)
		l.Items = append(l.Items, make([]v1.TaskAction, len(page))...)
		return decodePage(l.Items[base:], page)
	})
	if err != nil {
		return nil, err
	}
	l.ResourceVersion = strconv.FormatInt(rev, 10)
	return l, nil
}

// decodePage decodes page into out, split among the cores.
func decodePage(out []v1.TaskAction, page []controlplane.StoredObject) error {
	workers := min(goruntime.GOMAXPROCS(0), len(page))
	var g errgroup.Group
	for w := range workers {
		g.Go(func() error {
			for i := w; i < len(page); i += workers {
				ta := &out[i]
				if err := json.Unmarshal(page[i].Value, ta); err != nil {
					return fmt.Errorf("decode a stored TaskAction: %w", err)
				}
				ta.ResourceVersion = strconv.FormatInt(page[i].ModRevision, 10)
				defaultStatus(ta)
			}
			return nil
		})
	}
	return g.Wait()
}

// defaultStatus applies what the API server applies on every read: the
// CRD's one default, status {phase: QUEUED} for an object stored with no
// status (one nobody reported on: a create drops the status, and every
// status written here has a phase or conditions).
func defaultStatus(ta *v1.TaskAction) {
	if reflect.ValueOf(ta.Status).IsZero() {
		ta.Status.Phase = v1.PhaseQueued
	}
}
