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
// A start's list is one decoding of every live object, and nothing else
// waits on it, so the decoding takes every core and overlaps the reading:
// each page of the store is decoded in chunks by a bounded group while
// the next page is read (reading and decoding one after the other, 50,000
// actions took 2.2 s on 2 cores). The list is put together once at the
// end, at its size: grown page by page, it was copied over and over.
func listStored(ctx context.Context, stored Stored) (*v1.TaskActionList, error) {
	var g errgroup.Group
	g.SetLimit(goruntime.GOMAXPROCS(0))
	var chunks [][]v1.TaskAction
	total := 0
	rev, err := stored(ctx, func(page []controlplane.StoredObject) error {
		for len(page) > 0 {
			n := min(len(page), decodeChunk)
			in, out := page[:n], make([]v1.TaskAction, n)
			chunks, total, page = append(chunks, out), total+n, page[n:]
			g.Go(func() error { return decodeAll(out, in) }) // waits for a free worker
		}
		return nil
	})
	if werr := g.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	l := &v1.TaskActionList{Items: make([]v1.TaskAction, 0, total)}
	for _, c := range chunks {
		l.Items = append(l.Items, c...)
	}
	l.ResourceVersion = strconv.FormatInt(rev, 10)
	return l, nil
}

// decodeChunk is how many stored objects one worker decodes at a time: a
// few milliseconds of work, so that the cores share a page evenly.
const decodeChunk = 250

// decodeAll decodes each stored object into out, in order.
func decodeAll(out []v1.TaskAction, in []controlplane.StoredObject) error {
	for i := range in {
		ta := &out[i]
		if err := json.Unmarshal(in[i].Value, ta); err != nil {
			return fmt.Errorf("decode a stored TaskAction: %w", err)
		}
		ta.ResourceVersion = strconv.FormatInt(in[i].ModRevision, 10)
		defaultStatus(ta)
	}
	return nil
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
