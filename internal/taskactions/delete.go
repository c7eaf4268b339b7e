package taskactions

import (
	"context"
	"errors"
	"fmt"

	v1 "taskactions/api/v1"
	"taskactions/internal/runs"
)

// DeleteAction deletes an action; its descendants follow it through their
// owner references (the cluster's garbage collector, or package collector
// on the embedded control plane), in the background. While any of them is
// unfinished it is ErrConflict, unless abort is set: then the abort is
// recorded on the action first (as AbortAction does), and what still runs
// is stopped as it goes.
func (m *Manager) DeleteAction(ctx context.Context, id ActionID, abort bool) error {
	m.actions.CatchUp(ctx)
	target, err := m.objects.current(ctx, id, true)
	if errors.Is(err, ErrNotFound) && m.cfg.History != nil && m.cfg.Runs != nil {
		// Only history holds it, and so its descendants: children retire
		// before their parents.
		if _, err := m.history.action(ctx, id); err != nil {
			return err
		}
		return m.cfg.Runs.DeleteActions(ctx, id.RunID(), id.Name, nil)
	}
	if err != nil {
		return err
	}
	tree := append([]*v1.TaskAction{target}, m.cached.descendants(id)...)
	if err := m.finishedOrAbort(ctx, tree, abort, []ActionID{id}); err != nil {
		return err
	}
	if m.cfg.Runs != nil {
		if err := m.cfg.Runs.DeleteActions(ctx, id.RunID(), id.Name, tombstones(tree)); err != nil {
			return err
		}
	}
	return m.DeleteObject(ctx, target)
}

// DeleteRun deletes every action of a run: from history, at once, and
// from the control plane, its roots, which the others follow (see
// DeleteAction).
func (m *Manager) DeleteRun(ctx context.Context, run v1.RunID, abort bool) error {
	tas, err := m.ListRunActions(ctx, run)
	if err != nil {
		return err
	}
	var roots []*v1.TaskAction
	var rootIDs []ActionID
	for _, ta := range tas {
		if specParent(&ta.Spec) == "" {
			roots, rootIDs = append(roots, ta), append(rootIDs, IDOf(ta))
		}
	}
	if err := m.finishedOrAbort(ctx, tas, abort, rootIDs); err != nil {
		return err
	}
	existed := len(tas) > 0
	if m.cfg.Runs != nil {
		inHistory, err := m.cfg.Runs.DeleteRun(ctx, run, tombstones(tas))
		if err != nil {
			return err
		}
		existed = existed || inHistory
	}
	if !existed {
		return fmt.Errorf("run %s/%s/%s: %w", run.Project, run.Domain, run.Run, ErrNotFound)
	}
	for _, ta := range roots {
		if err := m.DeleteObject(ctx, ta); err != nil {
			return err
		}
	}
	return nil
}

// tombstones are what history must refuse to record again of objects
// being deleted: their names and incarnations.
func tombstones(tas []*v1.TaskAction) []runs.Action {
	out := make([]runs.Action, len(tas))
	for i, ta := range tas {
		id := IDOf(ta)
		out[i] = runs.Action{
			Project: id.Project, Domain: id.Domain, Run: id.Run, Name: id.Name, Parent: specParent(&ta.Spec),
			UID: string(ta.UID), Phase: v1.PhaseOfAction(ta), CreatedAt: ta.CreationTimestamp.Time, UpdatedAt: ta.CreationTimestamp.Time,
		}
	}
	return out
}

// finishedOrAbort checks that none of tas is unfinished; with abort, it
// aborts the tops of the trees instead, which the aborter carries down.
// An action already being aborted or deleted counts as finished: it is on
// its way out, whether or not the cache has seen it go (an abort answers
// before every cache has).
func (m *Manager) finishedOrAbort(ctx context.Context, tas []*v1.TaskAction, abort bool, tops []ActionID) error {
	for _, ta := range tas {
		if v1.PhaseOf(ta.Status.Conditions).Terminal() || leaving(ta) {
			continue
		}
		if !abort {
			return fmt.Errorf("action %s has not finished: abort it first, or delete with abort=true: %w", IDOf(ta), ErrConflict)
		}
		for _, id := range tops {
			if _, err := m.AbortAction(ctx, id, "deleted"); err != nil {
				return err
			}
		}
		return nil
	}
	return nil
}

// DeleteObject deletes an action's object, that incarnation only (its uid
// is a precondition); one gone already is no error.
func (m *Manager) DeleteObject(ctx context.Context, ta *v1.TaskAction) error {
	return m.objects.delete(ctx, ta)
}

// leaving reports whether an action's abort was recorded or its deletion
// has begun.
func leaving(ta *v1.TaskAction) bool {
	_, aborted := ta.Annotations[v1.AnnotationAbortReason]
	return aborted || ta.DeletionTimestamp != nil
}
