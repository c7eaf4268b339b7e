// Package aborter carries aborts down the tree of actions: an unfinished
// action below one an abort was asked of ends ABORTED with that
// ancestor's reason. As Flyte aborts, that is a deletion of its object
// (see the action manager's AbortOne): each unfinished descendant first
// gets the reason of its own, then the objects go, none before its
// unfinished descendants have their reasons. It is a pipeline.KeyQueue
// controller over the action manager's informer, so the work is spread
// over workers, survives the request that started it, and resumes after
// a restart: the state it works from is in the objects. Each round writes
// at most one action, whose update event brings in its own descendants
// and the ancestors waiting for it.
package aborter

import (
	"context"

	"github.com/rs/zerolog"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
	"taskactions/internal/pipeline"
)

// Actions is what the aborter needs of the action manager.
type Actions interface {
	// Informer is the shared TaskAction informer (the manager must be
	// watching).
	Informer() cache.SharedIndexInformer
	// Parent is the cached parent of an action, nil for a root or when
	// none is cached.
	Parent(ta *v1.TaskAction) *v1.TaskAction
	// Children are the cached direct children, in no order.
	Children(ta *v1.TaskAction) []*v1.TaskAction
	// AbortOne takes the next step of aborting one action with the
	// reason (the manager's default when empty): records the reason on
	// it, or deletes it when it is unfinished and no unfinished
	// descendant waits for a reason; those that wait are returned. A
	// finished one keeps its phase.
	AbortOne(ctx context.Context, ta *v1.TaskAction, reason string) (waiting []*v1.TaskAction, err error)
}

// Aborter is the controller; Run runs it.
type Aborter struct {
	actions Actions
	workers int
	log     zerolog.Logger
}

// New returns an aborter over the manager's informer (default 8 workers).
func New(actions Actions, workers int, log zerolog.Logger) *Aborter {
	if workers <= 0 {
		workers = 8
	}
	return &Aborter{actions: actions, workers: workers, log: log}
}

// maxAncestors bounds the walk up the tree: specs edited by hand could make
// a cycle.
const maxAncestors = 1000

// Run aborts until ctx ends. The manager must be watching.
func (a *Aborter) Run(ctx context.Context, ready func()) error {
	k := pipeline.NewKeyQueue("aborter", a.workers, a.log)
	inf := a.actions.Informer()
	return k.Run(ctx, ready, inf, cache.ResourceEventHandlerDetailedFuncs{
		// At start only aborted actions have work; later, a new action
		// may be the child of one.
		AddFunc: func(obj any, initial bool) {
			if !initial || v1.AbortRequested(obj.(*v1.TaskAction)) {
				k.Add(obj)
			}
		},
		// An action the abort reached: its descendants are next, and an
		// ancestor waiting for its reason may now go.
		UpdateFunc: func(_, obj any) {
			ta := obj.(*v1.TaskAction)
			if !v1.AbortRequested(ta) {
				return
			}
			k.Add(ta)
			for i, p := 0, a.actions.Parent(ta); p != nil && i < maxAncestors; i, p = i+1, a.actions.Parent(p) {
				if v1.AbortRequested(p) {
					k.Add(p)
				}
			}
		},
	}, func(ctx context.Context, key string) error {
		return a.reconcile(ctx, key, inf.GetStore(), k.Add)
	})
}

// reconcile aborts the action under key if an ancestor (or itself) asks
// for it and it is unfinished; if it is finished, its children are next.
func (a *Aborter) reconcile(ctx context.Context, key string, store cache.Store, add func(any)) error {
	obj, exists, err := store.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	ta := obj.(*v1.TaskAction)
	if ta.DeletionTimestamp != nil {
		return nil
	}
	src := a.abortingAncestor(ta)
	if src == nil {
		return nil
	}
	if !v1.PhaseOfAction(ta).Terminal() {
		waiting, err := a.actions.AbortOne(ctx, ta, v1.AbortReasonOf(src))
		for _, w := range waiting {
			add(w)
		}
		return err
	}
	// From the index, not the sorted lists: order does not matter here, and
	// the lists may lag the event that woke this reconcile.
	for _, c := range a.actions.Children(ta) {
		add(c)
	}
	return nil
}

// abortingAncestor is the action itself or its nearest ancestor that
// asks for an abort, or nil.
func (a *Aborter) abortingAncestor(ta *v1.TaskAction) *v1.TaskAction {
	for range maxAncestors {
		if v1.AbortRequested(ta) {
			return ta
		}
		if ta = a.actions.Parent(ta); ta == nil {
			return nil
		}
	}
	return nil
}
