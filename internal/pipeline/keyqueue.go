package pipeline

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// KeyQueue is the loop every controller here shares (the aborter, the
// collector, the Stage controller): informer events put object keys in a
// workqueue, which holds each key once (so it is bounded by the objects),
// and workers reconcile them. A failed reconcile is retried with backoff,
// but not an object that is gone or too large to change.
type KeyQueue struct {
	name    string
	workers int
	log     zerolog.Logger
	q       workqueue.TypedRateLimitingInterface[string]
}

// NewKeyQueue returns a queue that reconciles with workers goroutines.
func NewKeyQueue(name string, workers int, log zerolog.Logger) *KeyQueue {
	return &KeyQueue{name: name, workers: workers, log: log,
		q: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name})}
}

// AddKey queues a key.
func (k *KeyQueue) AddKey(key string) { k.q.Add(key) }

// AddAfter queues a key once d has passed (a controller's next poll).
func (k *KeyQueue) AddAfter(key string, d time.Duration) { k.q.AddAfter(key, d) }

// Add queues the key of an object.
func (k *KeyQueue) Add(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		k.q.Add(key)
	}
}

// Run registers handler on inf, calls ready once the workers run, and
// reconciles until ctx ends. It is the body of a lifecycle.Runnable: a
// controller that cannot register its handler fails its start.
func (k *KeyQueue) Run(ctx context.Context, ready func(), inf cache.SharedIndexInformer, handler cache.ResourceEventHandler, reconcile func(context.Context, string) error) error {
	reg, err := inf.AddEventHandler(handler)
	if err != nil {
		return err
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	return k.Work(ctx, ready, reconcile)
}

// Work reconciles what is queued, by whatever adds keys, until ctx ends;
// then the queue is shut down (later adds are dropped) and Work returns
// once the workers have finished. Keys added before Work are kept for it.
func (k *KeyQueue) Work(ctx context.Context, ready func(), reconcile func(context.Context, string) error) error {
	var wg sync.WaitGroup
	for range k.workers {
		wg.Go(func() {
			for k.next(ctx, reconcile) {
			}
		})
	}
	ready()
	<-ctx.Done()
	k.q.ShutDown()
	wg.Wait()
	return nil
}

// Len is the number of keys waiting for a worker.
func (k *KeyQueue) Len() int { return k.q.Len() }

// ShuttingDown reports whether Work has ended (adds are dropped).
func (k *KeyQueue) ShuttingDown() bool { return k.q.ShuttingDown() }

func (k *KeyQueue) next(ctx context.Context, reconcile func(context.Context, string) error) bool {
	key, shutdown := k.q.Get()
	if shutdown {
		return false
	}
	defer k.q.Done(key)
	err := reconcile(ctx, key)
	switch {
	case err == nil || ctx.Err() != nil:
		k.q.Forget(key)
	case errors.Is(err, ErrTooLarge) || errors.Is(err, ErrNotFound):
		k.log.Error().Err(err).Str("object", key).Msgf("%s: giving this object up", k.name)
		k.q.Forget(key)
	default:
		k.log.Warn().Err(err).Str("object", key).Msgf("%s: retrying", k.name)
		k.q.AddRateLimited(key)
	}
	return true
}
