package taskactions

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "taskactions/api/v1"
)

// DefaultAbortReason is kept when an abort gives none.
const DefaultAbortReason = "aborted by user"

// An abort ends an action as Flyte's Actions service ends one (its
// AbortAction): its object is deleted before it finished. Every reader
// then agrees: Flyte's Actions service and this server read a deletion of
// an unfinished action as ABORTED; a terminal condition (Failed, reason
// Aborted, as earlier versions of this server wrote) reads FAILED in
// Flyte. History keeps the action ABORTED, with the reason the abort
// recorded on the object (annotation flyte.org/abort-reason) before
// deleting it. An executor's finalizer holds the deletion until it has
// stopped the task.
//
// A tree goes top down in reasons and bottom up in deletions: every
// unfinished descendant gets the reason of its own before its ancestor's
// object goes (the garbage collector, or package collector, deletes the
// descendants of a deleted object, and a deletion cannot carry a reason),
// so each is recorded with it whoever deletes it.

// AbortAction records an abort on the action and returns the action as
// the abort leaves it: ABORTED with the reason, unless it had finished.
// The reason goes on as an annotation, and an unfinished action none of
// whose unfinished descendants waits for a reason is deleted at once;
// else the Aborter (package aborter) carries the reason down the tree in
// the background and deletes it once they have theirs, so the request neither waits for a large run nor
// leaves it half aborted when its client gives up; a restart picks the
// work up again from the annotations. An action already finished keeps
// its phase, but the annotation still asks for its unfinished descendants
// to be aborted. Idempotent: the first reason stays.
func (m *Manager) AbortAction(ctx context.Context, id ActionID, reason string) (Action, error) {
	if reason == "" {
		reason = DefaultAbortReason
	}
	m.actions.CatchUp(ctx)
	cur, err := m.objects.current(ctx, id, true)
	if err != nil {
		return Action{}, err
	}
	ta, _, deleted, err := m.abortStep(ctx, cur, reason)
	if err != nil {
		return Action{}, err
	}
	if deleted {
		// The answer waits for the deletion to reach the cache, as the next
		// read would: a client that reads at once then finds it ABORTED,
		// from history, even when the cache is slow to hear of it.
		m.actions.CatchUp(ctx)
	}
	if ta == nil { // gone meanwhile
		ta = cur
	}
	return updateOf(ta, true).Action, nil
}

// AbortOne takes the next step of an abort of one action: it records the
// reason on it (DefaultAbortReason when empty; a reason already there
// stays), then deletes it, if it has not finished, once none of its
// unfinished descendants waits for a reason. Those that wait are
// returned, for the aborter to give them theirs; nothing is deleted
// while any does. It is the aborter's write (package aborter).
//
// The deletion is conditional on the version read, so an abort racing a
// SUCCEEDED report ends in exactly one of the two.
func (m *Manager) AbortOne(ctx context.Context, ta *v1.TaskAction, reason string) (waiting []*v1.TaskAction, err error) {
	_, waiting, _, err = m.abortStep(ctx, ta, reason)
	return waiting, err
}

// abortStep is AbortOne, which also returns the object with the reason
// on it (nil when it is gone) and whether it deleted it.
func (m *Manager) abortStep(ctx context.Context, ta *v1.TaskAction, reason string) (_ *v1.TaskAction, waiting []*v1.TaskAction, deleted bool, err error) {
	if reason == "" {
		reason = DefaultAbortReason
	}
	if _, ok := ta.Annotations[v1.AnnotationAbortReason]; !ok {
		if ta, err = m.recordAbort(ctx, ta, reason); err != nil || ta == nil {
			return nil, nil, false, err
		}
	}
	if ta.DeletionTimestamp != nil || v1.PhaseOfAction(ta).Terminal() {
		return ta, nil, false, nil
	}
	for _, d := range m.cached.descendants(IDOf(ta)) {
		if !v1.AbortRequested(d) && !v1.PhaseOfAction(d).Terminal() && d.DeletionTimestamp == nil {
			waiting = append(waiting, d)
		}
	}
	if len(waiting) > 0 {
		return ta, waiting, false, nil
	}
	// A read right after the abort waits for the deletion to reach the
	// cache and for its record below, and is then served from history,
	// ABORTED.
	done := m.actions.Deleting(ta)
	gone, err := m.objects.deleteUnfinished(ctx, ta)
	defer func() { done(gone != nil) }()
	if err != nil {
		return nil, nil, false, fmt.Errorf("abort %s (delete its object, as Flyte aborts): %w", IDOf(ta), err)
	}
	if gone != nil && len(gone.Finalizers) == 0 && m.cfg.Runs != nil {
		// What the notifier records of the deletion, recorded now: a read
		// right after the abort (from history: the object is gone) finds
		// it ABORTED. Should this fail, the notifier's record follows. (An
		// object a finalizer holds is recorded once it goes.)
		if err := m.cfg.Runs.UpdateActionStatus(ctx, updateOf(gone, true).Record()); err != nil {
			m.cfg.Log.Warn().Err(err).Str("action", IDOf(gone).String()).Msg("abort: history will record it a moment later")
		}
	}
	return ta, nil, gone != nil, nil
}

// recordAbort puts the reason on the action, for history to keep it once
// the object is gone; its uid is a precondition. An object gone already
// (deleted, or collected with its parent) is nil: nothing is left to do.
func (m *Manager) recordAbort(ctx context.Context, ta *v1.TaskAction, reason string) (*v1.TaskAction, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": ta.UID, "annotations": map[string]string{v1.AnnotationAbortReason: reason},
	}})
	if err != nil {
		return nil, err
	}
	out, err := m.cfg.Client.FlyteV1().TaskActions(ta.Namespace).Patch(ctx, ta.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case isTooLarge(err):
		return nil, fmt.Errorf("action %s is too large to record an abort in (delete it): %w", IDOf(ta), ErrTooLarge)
	case err != nil:
		return nil, fmt.Errorf("record the abort of %s: %w", IDOf(ta), err)
	}
	m.actions.Wrote(out)
	return out, nil
}
