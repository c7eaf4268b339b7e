package taskactions

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "taskactions/api/v1"
)

// DefaultAbortReason is kept when an abort gives none.
const DefaultAbortReason = "aborted by user"

// AbortAction records an abort on the action and returns: the reason goes
// on as an annotation, and an unfinished action ends ABORTED. The Aborter
// then ends every unfinished descendant (package aborter) the same way, in the background,
// so the request neither waits for a large run nor leaves it half aborted
// when its client gives up; a restart picks the work up again from the
// annotations and phases. An action already finished keeps its phase, but
// the annotation still asks for its unfinished descendants to be aborted.
// Idempotent: the first reason stays.
//
// How an action ends ABORTED depends on whose it is. This server's own
// get the terminal condition (Failed, reason Aborted), and nothing is
// deleted. An action Flyte enqueued is aborted as Flyte's Actions service
// aborts it: its object is deleted (with the reason on it), which Flyte's
// executor answers by stopping the task and Flyte's Actions service, like
// this server, reads as ABORTED; a terminal condition would read FAILED
// there and leave Flyte's task running.
//
// Each write is conditional on the version it read, so an abort racing a
// SUCCEEDED report ends in exactly one of the two.
func (m *Manager) AbortAction(ctx context.Context, id ActionID, reason string) error {
	if reason == "" {
		reason = DefaultAbortReason
	}
	m.actions.CatchUp(ctx)
	cur, err := m.objects.current(ctx, id, true)
	if err != nil {
		return err
	}
	if v1.PhaseOfAction(cur) == v1.PhaseAborted {
		return nil
	}
	if _, ok := cur.Annotations[v1.AnnotationAbortReason]; !ok {
		// The reason goes on first, so the ABORTED update already carries it.
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": cur.UID, "annotations": map[string]string{v1.AnnotationAbortReason: reason},
		}})
		out, err := m.cfg.Client.FlyteV1().TaskActions(cur.Namespace).Patch(ctx, cur.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case isTooLarge(err):
			return fmt.Errorf("action %s is too large to record an abort in (delete it): %w", id, ErrTooLarge)
		case err != nil:
			return fmt.Errorf("record the abort of %s: %w", id, err)
		}
		m.actions.Wrote(out)
		reason = out.Annotations[v1.AnnotationAbortReason]
		cur = out
	}
	return m.AbortOne(ctx, cur, reason)
}

// AbortOne ends one unfinished action ABORTED with the reason
// (DefaultAbortReason when empty); a finished one keeps its phase. It is
// the aborter's write (package aborter), which carries an abort down.
func (m *Manager) AbortOne(ctx context.Context, ta *v1.TaskAction, reason string) error {
	if reason == "" {
		reason = DefaultAbortReason
	}
	if v1.EnqueuedByFlyte(ta) {
		// As Flyte aborts (actions/k8s AbortAction): by deleting its
		// object, whose descendants follow it (the garbage collector, or
		// package collector here).
		if err := m.objects.deleteUnfinished(ctx, ta); err != nil {
			return fmt.Errorf("abort %s (delete its object, as Flyte aborts): %w", IDOf(ta), err)
		}
		return nil
	}
	_, err := m.UpdateStatus(ctx, IDOf(ta), func(ta *v1.TaskAction) error {
		if v1.PhaseOf(ta.Status.Conditions).Terminal() {
			return ErrNoChange
		}
		ta.Status.ErrorState = &v1.ErrorState{Code: v1.ReasonAborted, Kind: v1.ErrorKindUser, Message: reason}
		m.cfg.setPhase(ta, v1.PhaseChange{Phase: v1.PhaseAborted, Reason: v1.ReasonAborted, Message: reason})
		return nil
	})
	return err
}
