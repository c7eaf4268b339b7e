package taskactions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "taskactions/api/v1"
)

// DefaultAbortReason is kept when an abort gives none.
const DefaultAbortReason = "aborted by user"

// AbortAction ends the action and all its descendants ABORTED (condition
// reason Aborted), keeping the reason (annotation, shown as abortReason).
// Actions already terminal keep their phase. Nothing is deleted: the
// records stay readable, and nothing relies on owner-reference garbage
// collection, which the embedded control plane does not have. Idempotent.
//
// Each status write is conditional on the version it read, so an abort
// racing a SUCCEEDED report ends in exactly one of the two.
func (m *Manager) AbortAction(ctx context.Context, id ActionID, reason string) error {
	if reason == "" {
		reason = DefaultAbortReason
	}
	m.written.catchUp(ctx)
	if _, err := m.current(ctx, id, true); err != nil {
		return err
	}
	// Abort, then look again: a child enqueued while we worked is either
	// refused (its parent is already aborted) or found by the next pass.
	done := map[string]bool{}
	for {
		todo := m.subtree(id, done)
		if len(todo) == 0 {
			return nil
		}
		for _, aid := range todo {
			done[aid.Name] = true
			if err := m.abortOne(ctx, aid, reason); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		m.written.catchUp(ctx)
	}
}

// subtree lists the action and its descendants, from the cache, minus
// those in done, parents before children.
func (m *Manager) subtree(root ActionID, done map[string]bool) []ActionID {
	var out []ActionID
	queue := []ActionID{root}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if !done[id.Name] {
			out = append(out, id)
		}
		children, _ := m.byIndex(indexParent, parentIndexKey(id.Project, id.Domain, id.Run, id.Name))
		for _, c := range children {
			queue = append(queue, ActionID{id.Project, id.Domain, id.Run, c.Spec.ActionName})
		}
	}
	return out
}

func (m *Manager) abortOne(ctx context.Context, id ActionID, reason string) error {
	cur, err := m.current(ctx, id, true)
	if err != nil {
		return err
	}
	if v1.PhaseOf(cur.Status.Conditions).Terminal() {
		return nil
	}
	// The reason goes on first, so the ABORTED update already carries it.
	if cur.Annotations[v1.AnnotationAbortReason] != reason {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": cur.UID, "annotations": map[string]string{v1.AnnotationAbortReason: reason},
		}})
		out, err := m.client.FlyteV1().TaskActions(cur.Namespace).Patch(ctx, cur.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("annotate abort reason on %s: %w", id, err)
		}
		m.written.wrote(resourceVersion(out))
	}
	_, err = m.UpdateStatus(ctx, id, func(ta *v1.TaskAction) error {
		if v1.PhaseOf(ta.Status.Conditions).Terminal() {
			return ErrNoChange
		}
		ta.Status.ErrorState = &v1.ErrorState{Code: v1.ReasonAborted, Kind: v1.ErrorKindUser, Message: reason}
		m.SetPhase(ta, v1.PhaseAborted, v1.ReasonAborted, reason, false)
		return nil
	})
	return err
}
