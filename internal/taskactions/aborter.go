package taskactions

import (
	"context"

	"github.com/rs/zerolog"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
	"taskactions/internal/pipeline"
)

// Aborter carries aborts down the tree: an unfinished action below an
// aborted one (or one an abort was asked of) ends ABORTED with that
// ancestor's reason. It is a workqueue controller over the manager's
// informer, so the work is spread over workers, survives the request that
// started it, and resumes after a restart: the state it works from is in
// the objects. Each round writes at most one action, whose update event
// brings its own children in.
type Aborter struct {
	m       *Manager
	workers int
	log     zerolog.Logger
}

// NewAborter returns an aborter over m's informer (default 8 workers).
func NewAborter(m *Manager, workers int, log zerolog.Logger) *Aborter {
	if workers <= 0 {
		workers = 8
	}
	return &Aborter{m: m, workers: workers, log: log}
}

// maxAncestors bounds the walk up the tree: specs edited by hand could make
// a cycle.
const maxAncestors = 1000

// Run aborts until ctx ends. The manager must be watching.
func (a *Aborter) Run(ctx context.Context) error {
	k := pipeline.NewKeyQueue("aborter", a.workers, a.log)
	inf := a.m.Informer()
	return k.Run(ctx, inf, cache.ResourceEventHandlerDetailedFuncs{
		// At start only aborted actions have work; later, a new action
		// may be the child of one.
		AddFunc: func(obj any, initial bool) {
			if !initial || abortRequested(obj.(*v1.TaskAction)) {
				k.Add(obj)
			}
		},
		UpdateFunc: func(_, obj any) {
			if abortRequested(obj.(*v1.TaskAction)) {
				k.Add(obj)
			}
		},
	}, func(ctx context.Context, key string) error {
		return a.reconcile(ctx, key, inf.GetStore(), k.AddKey)
	})
}

// reconcile aborts the action under key if an ancestor (or itself) asks
// for it and it is unfinished; if it is finished, its children are next.
func (a *Aborter) reconcile(ctx context.Context, key string, store cache.Store, add func(string)) error {
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
		reason := abortReasonOf(src)
		if reason == "" {
			reason = DefaultAbortReason
		}
		return a.m.abortOne(ctx, ta, reason)
	}
	s := &ta.Spec
	// From the index, not the sorted lists: order does not matter here, and
	// the lists may lag the event that woke this reconcile.
	children, _ := a.m.actions.ByIndex(indexParent, idKey(s.Project, s.Domain, s.RunName, s.ActionName))
	for _, c := range children {
		add(keyOf(c.Namespace, c.Name))
	}
	return nil
}

// abortingAncestor is the action itself or its nearest ancestor that
// asks for an abort, or nil.
func (a *Aborter) abortingAncestor(ta *v1.TaskAction) *v1.TaskAction {
	for range maxAncestors {
		if abortRequested(ta) {
			return ta
		}
		parent := specParent(&ta.Spec)
		if parent == "" {
			return nil
		}
		s := &ta.Spec
		p, err := a.m.cached(ActionID{s.Project, s.Domain, s.RunName, parent})
		if err != nil || p == nil {
			return nil
		}
		ta = p
	}
	return nil
}
