package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"taskactions/internal/journal"
)

// Cache is one kind's pipeline: informer, lists, views, journal. It is
// safe for concurrent use after New; Start and Stop bound its lifetime,
// and it may be started again after Stop.
type Cache[T Object, V any] struct {
	kind      Kind[T, V]
	log       zerolog.Logger
	journal   *journal.Journal[V]
	written   rvWaiter // lets reads wait for this server's own writes
	lists     *listCache[T, V]
	views     *viewCache[T, V]
	published atomic.Int64
	health    watchHealth

	mu  sync.Mutex
	run *running // set by Start, cleared by Stop
}

// running is one Start..Stop lifetime.
type running struct {
	cancel   context.CancelFunc
	done     chan struct{}
	informer cache.SharedIndexInformer
	handler  cache.ResourceEventHandlerRegistration
	synced   chan struct{}
}

// New returns a stopped cache of the kind.
func New[T Object, V any](kind Kind[T, V], log zerolog.Logger) *Cache[T, V] {
	if kind.Topics == nil {
		kind.Topics = func(T, V) []string { return nil }
	}
	return &Cache[T, V]{
		kind:    kind,
		log:     log.With().Str("kind", kind.Name).Logger(),
		journal: journal.New[V](kind.Journal),
		lists:   newListCache[T, V](kind.Lists, kind.Compare, kind.Sort),
		views:   newViewCache(kind.View),
	}
}

// Name is the kind's name.
func (c *Cache[T, V]) Name() string { return c.kind.Name }

// Start starts the informer and returns once the cache is synced. From
// then on the journal covers every event after the list it started from.
func (c *Cache[T, V]) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.run != nil {
		c.mu.Unlock()
		return errors.New("already started")
	}
	r, err := c.newRunning()
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.run = r
	c.mu.Unlock()

	rctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		r.informer.RunWithContext(rctx)
	}()
	// WaitFor wakes on the handler's sync; WaitForCacheSync polls every
	// 100 ms, which a start of several kinds, one after the other, adds up.
	if !cache.WaitFor(ctx, "", r.handler.HasSyncedChecker()) {
		c.Stop()
		return fmt.Errorf("wait for the %s cache: %w", c.kind.Name, context.Cause(ctx))
	}
	// Everything after the list's resource version will come through the
	// handler, in order: the journal covers resumes from there on.
	rv := parseRV(r.informer.LastSyncResourceVersion())
	c.journal.SetFloor(rv)
	c.written.advance(rv)
	close(r.synced)
	c.log.Info().Uint64("resourceVersion", rv).Int("objects", len(r.informer.GetStore().ListKeys())).Msg("cache synced")
	return nil
}

// newRunning builds the informer with the kind's indexes and the handler.
// Managed fields are dropped on the way in: they are a large share of
// each object and nobody here reads them. The kind's Compact runs then.
func (c *Cache[T, V]) newRunning() (*running, error) {
	c.health.reset()
	inf := cache.NewSharedIndexInformerWithOptions(c.health.wrap(c.kind.ListWatch), c.kind.Example,
		cache.SharedIndexInformerOptions{Indexers: cache.Indexers{}})
	if err := inf.AddIndexers(c.kind.Indexers); err != nil {
		return nil, err
	}
	if err := inf.SetTransform(func(obj any) (any, error) {
		if o, ok := obj.(metav1.Object); ok {
			o.SetManagedFields(nil)
		}
		if t, ok := obj.(T); ok && c.kind.Compact != nil {
			c.kind.Compact(t)
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	reg, err := inf.AddEventHandler(c.handler())
	if err != nil {
		return nil, err
	}
	return &running{informer: inf, handler: reg, synced: make(chan struct{}), done: make(chan struct{})}, nil
}

// stopWait is how long Stop waits for the informer to end. An informer
// whose watch failed may be asleep in client-go's watch-list backoff,
// which does not wake on cancellation (reflector.go, watchList: up to 30 s
// and jitter); a server whose etcd died stopped nine caches in a row and
// hung for minutes. Past stopWait the informer is left to end on its
// own: its handler is already removed, and it returns at its next wake.
const stopWait = 3 * time.Second

// Stop stops the informer and waits for it, up to stopWait.
func (c *Cache[T, V]) Stop() {
	c.mu.Lock()
	r := c.run
	c.run = nil
	c.mu.Unlock()
	if r == nil {
		return
	}
	if err := r.informer.RemoveEventHandler(r.handler); err != nil {
		c.log.Warn().Err(err).Msg("cannot remove the cache's event handler")
	}
	if r.cancel != nil {
		r.cancel()
		t := time.NewTimer(stopWait)
		select {
		case <-r.done:
		case <-t.C:
			c.log.Warn().Stringer("waited", stopWait).Msg("the informer is still in client-go's backoff after a failed watch: not waiting for it")
		}
		t.Stop()
	}
	c.lists.forget()
	c.views.forget()
}

// HasSynced reports whether the cache holds every object.
func (c *Cache[T, V]) HasSynced() bool {
	select {
	case <-c.Synced():
		return true
	default:
		return false
	}
}

// WatchErr is the error of the informer's last list or watch call, nil
// when it worked: a synced cache that cannot watch no longer changes.
func (c *Cache[T, V]) WatchErr() error { return c.health.err() }

// Synced is closed once the cache is synced (nil before Start).
func (c *Cache[T, V]) Synced() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run == nil {
		return nil
	}
	return c.run.synced
}

// Informer is the shared informer, for controllers that build on this
// cache. Nil when stopped.
func (c *Cache[T, V]) Informer() cache.SharedIndexInformer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run == nil {
		return nil
	}
	return c.run.informer
}

// Journal is the kind's event journal (stream cursors come from it).
func (c *Cache[T, V]) Journal() *journal.Journal[V] { return c.journal }

// Published counts the events published to subscribers.
func (c *Cache[T, V]) Published() int64 { return c.published.Load() }

// Objects is the number of cached objects.
func (c *Cache[T, V]) Objects() int {
	inf := c.Informer()
	if inf == nil {
		return 0
	}
	return len(inf.GetStore().ListKeys())
}

// Wrote notes the resource version of a write this server made: reads
// that CatchUp wait until the cache has it, and so does CatchUpWith of
// the object.
func (c *Cache[T, V]) Wrote(obj T) {
	c.written.wroteObject(string(obj.GetUID()), parseRV(obj.GetResourceVersion()))
}

// WroteVersion notes a resource version this server wrote, or one after
// it.
func (c *Cache[T, V]) WroteVersion(rv string) { c.written.wrote(parseRV(rv)) }

// Deleting notes, before this server deletes obj, that reads are to wait
// (CatchUp, briefly: see maxReadWait) until the cache has it gone or, when
// a finalizer holds it, marked for deletion, and its deleter called done
// (with whether the delete happened): a deleter that records something of
// the deletion (an abort's history) calls done after that, so that no
// read finds the object gone and the record not yet there.
//
// A delete answers with no resource version to wait for, and a version
// read after it (a one-item list's) is the store's, which this kind's
// events alone may not reach for a long while: every other kind's write
// moves it on, and reads waited their whole bound until one of this kind
// came. So the wait is for this object's own event.
func (c *Cache[T, V]) Deleting(obj T) (done func(deleted bool)) {
	uid := string(obj.GetUID())
	c.written.deletingObject(uid)
	return func(deleted bool) { c.written.deletionDone(uid, deleted) }
}

// DeletingName is Deleting of the cached object ns/name. When the cache
// does not hold it, reads have nothing to wait for.
func (c *Cache[T, V]) DeletingName(ns, name string) (done func(deleted bool)) {
	obj, ok, err := c.lookup(ns, name)
	if err != nil || !ok {
		return func(bool) {}
	}
	return c.Deleting(obj)
}

// CatchUp waits (briefly, see maxReadWait) until the cache reflects every
// write this server made before the call: read-your-writes.
func (c *Cache[T, V]) CatchUp(ctx context.Context) { c.written.catchUp(ctx) }

// CatchUpWith is CatchUp for one cached object, and only when this server
// wrote it since that copy: a write that starts from the cache then does
// not start from the version it replaced (and fail on a conflict). It
// reports whether it waited, in which case the caller reads the object
// again.
func (c *Cache[T, V]) CatchUpWith(ctx context.Context, obj T) bool {
	if !c.written.behind(string(obj.GetUID()), parseRV(obj.GetResourceVersion())) {
		return false
	}
	c.written.catchUp(ctx)
	return true
}

// Get returns the cached object ns/name, or the zero T. A cluster-scoped
// object has no namespace (ns empty).
func (c *Cache[T, V]) Get(ns, name string) (T, error) {
	obj, _, err := c.lookup(ns, name)
	return obj, err
}

// lookup is Get, which also reports whether the cache holds the object.
func (c *Cache[T, V]) lookup(ns, name string) (T, bool, error) {
	var zero T
	inf := c.Informer()
	if inf == nil {
		return zero, false, errNotWatching
	}
	obj, ok, err := inf.GetStore().GetByKey(cache.ObjectName{Namespace: ns, Name: name}.String())
	if err != nil || !ok {
		return zero, false, err
	}
	return obj.(T), true, nil
}

// ByIndex returns the objects under an index key, unsorted and uncached.
func (c *Cache[T, V]) ByIndex(index, key string) ([]T, error) {
	inf := c.Informer()
	if inf == nil {
		return nil, errNotWatching
	}
	objs, err := inf.GetIndexer().ByIndex(index, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(objs))
	for i, o := range objs {
		out[i] = o.(T)
	}
	return out, nil
}

// List returns the sorted list of an index key (one the kind's Lists
// names, so that events keep it current). The caller owns the slice, not
// the objects. The list is as fresh as the events this cache has handled
// (what CatchUp waits for); a controller woken by a handler of its own on
// the informer may run before this cache's handler, and reads ByIndex.
func (c *Cache[T, V]) List(index, key string) ([]T, error) {
	if c.Informer() == nil {
		return nil, errNotWatching
	}
	return c.lists.objects(ListKey(index, key), func() ([]T, error) { return c.ByIndex(index, key) }, c.views.of)
}

// ListViews is List, but the objects' current views (what Views of List
// gives, without looking each up).
func (c *Cache[T, V]) ListViews(index, key string) ([]V, error) {
	if c.Informer() == nil {
		return nil, errNotWatching
	}
	return c.lists.views(ListKey(index, key), func() ([]T, error) { return c.ByIndex(index, key) }, c.views.of)
}

// All returns every cached object, unsorted.
func (c *Cache[T, V]) All() []T {
	inf := c.Informer()
	if inf == nil {
		return nil
	}
	objs := inf.GetStore().List()
	out := make([]T, len(objs))
	for i, o := range objs {
		out[i] = o.(T)
	}
	return out
}

// View returns the current view of a cached object.
func (c *Cache[T, V]) View(obj T) V { return c.views.of(obj) }

// Views returns the current view of each of objs, in the same order.
func (c *Cache[T, V]) Views(objs []T) []V {
	out := make([]V, len(objs))
	for i, o := range objs {
		out[i] = c.views.of(o)
	}
	return out
}

// Subscribe opens a subscription to a topic. With after set and still
// covered by the journal, start.Replay holds exactly the events missed
// since; otherwise snapshot holds the views of what scope returns,
// consistent with start.Cursor: nothing is lost or repeated between the
// snapshot and the live events. Like reads, it first waits for this
// server's own writes to reach the cache. Close the subscription when
// done.
func (c *Cache[T, V]) Subscribe(ctx context.Context, topic string, after *uint64, scope func() []T) (sub *journal.Subscription[V], start journal.Start[V], snapshot []V) {
	c.written.catchUp(ctx)
	sub, start = c.journal.Subscribe(topic, after, func() uint64 {
		objs := scope()
		var top uint64
		snapshot = c.Views(objs)
		for _, o := range objs {
			top = max(top, parseRV(o.GetResourceVersion()))
		}
		return top
	})
	return sub, start, snapshot
}

var errNotWatching = errors.New("the cache is not started")

// parseRV parses a resource version. etcd-backed versions are decimal
// revisions that rise across the whole store.
func parseRV(s string) uint64 {
	rv, _ := strconv.ParseUint(s, 10, 64)
	return rv
}

// Stats is what metrics and readiness read of any kind's cache.
type Stats interface {
	Name() string
	Objects() int
	Published() int64
	HasSynced() bool
	WatchErr() error
}

var _ Stats = (*Cache[*metav1.PartialObjectMetadata, any])(nil)
