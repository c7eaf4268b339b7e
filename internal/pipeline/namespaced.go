package pipeline

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"taskactions/internal/journal"
)

// The reads every namespaced kind served by project has (Stages, Freight,
// Promotions): a namespace's objects as one sorted list, one object, and
// streams of either. A kind gets them by listing and routing its objects
// with ByNamespace. A cluster-scoped kind (ClusterAnalysisTemplate) gets
// them too, every object in the empty namespace.

// IndexNamespace indexes objects by namespace.
const IndexNamespace = "namespace"

// ByNamespace fills in a kind's indexes, lists and topics so that the
// Namespace* reads below serve it; extra topics, if any, are kept.
func ByNamespace[T Object, V any](k Kind[T, V]) Kind[T, V] {
	if k.Indexers == nil {
		k.Indexers = cache.Indexers{}
	}
	k.Indexers[IndexNamespace] = cache.MetaNamespaceIndexFunc
	lists := k.Lists
	k.Lists = func(o T) []string {
		keys := []string{ListKey(IndexNamespace, o.GetNamespace())}
		if lists != nil {
			keys = append(keys, lists(o)...)
		}
		return keys
	}
	topics := k.Topics
	k.Topics = func(o T, v V) []string {
		t := []string{namespaceTopic(o.GetNamespace()), objectTopic(o.GetNamespace(), o.GetName())}
		if topics != nil {
			t = append(t, topics(o, v)...)
		}
		return t
	}
	return k
}

func namespaceTopic(ns string) string    { return "ns/" + ns }
func objectTopic(ns, name string) string { return "obj/" + ns + "/" + name }

// InNamespace returns the views of a namespace's objects in the kind's
// order, after this server's own writes have reached the cache.
func (c *Cache[T, V]) InNamespace(ctx context.Context, ns string) ([]V, error) {
	c.CatchUp(ctx)
	return c.ListViews(IndexNamespace, ns)
}

// Named returns the view of one object, and whether it exists, after this
// server's own writes have reached the cache.
func (c *Cache[T, V]) Named(ctx context.Context, ns, name string) (v V, ok bool, err error) {
	c.CatchUp(ctx)
	obj, err := c.Get(ns, name)
	var zero T
	if err != nil || obj == zero {
		return v, false, err
	}
	return c.View(obj), true, nil
}

// SubscribeNamespace opens a subscription to a namespace's objects, or,
// with name set, to that one object (see Subscribe).
func (c *Cache[T, V]) SubscribeNamespace(ctx context.Context, ns, name string, after *uint64) (*journal.Subscription[V], journal.Start[V], []V) {
	if name == "" {
		return c.Subscribe(ctx, namespaceTopic(ns), after, func() []T {
			objs, _ := c.List(IndexNamespace, ns)
			return objs
		})
	}
	return c.Subscribe(ctx, objectTopic(ns, name), after, func() []T {
		var zero T
		if obj, _ := c.Get(ns, name); obj != zero {
			return []T{obj}
		}
		return nil
	})
}
