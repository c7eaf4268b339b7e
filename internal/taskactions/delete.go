package taskactions

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	target, err := m.current(ctx, id, true)
	if errors.Is(err, ErrNotFound) && m.cfg.History != nil {
		return m.deleteRetiredAction(ctx, id)
	}
	if err != nil {
		return err
	}
	tree := append([]*v1.TaskAction{target}, m.descendants(id)...)
	if err := m.finishedOrAbort(ctx, tree, abort, []ActionID{id}); err != nil {
		return err
	}
	if m.cfg.Notifier != nil {
		if err := m.cfg.Notifier.DeleteActions(ctx, id.RunID(), id.Name, tombstones(tree)); err != nil {
			return err
		}
	}
	return m.DeleteObject(ctx, target)
}

// deleteRetiredAction deletes an action that only history holds (and so
// do its descendants: children retire before their parents).
func (m *Manager) deleteRetiredAction(ctx context.Context, id ActionID) error {
	if _, err := m.retired(ctx, id); err != nil {
		return err
	}
	return m.cfg.Notifier.DeleteActions(ctx, id.RunID(), id.Name, nil)
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
	if m.cfg.Notifier != nil {
		inHistory, err := m.cfg.Notifier.DeleteRun(ctx, run, tombstones(tas))
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
func (m *Manager) finishedOrAbort(ctx context.Context, tas []*v1.TaskAction, abort bool, tops []ActionID) error {
	for _, ta := range tas {
		if v1.PhaseOf(ta.Status.Conditions).Terminal() {
			continue
		}
		if !abort {
			return fmt.Errorf("action %s has not finished: abort it first, or delete with abort=true: %w", IDOf(ta), ErrConflict)
		}
		for _, id := range tops {
			if err := m.AbortAction(ctx, id, "deleted"); err != nil {
				return err
			}
		}
		return nil
	}
	return nil
}

// descendants are the action's children, theirs, and so on, from the
// cache.
func (m *Manager) descendants(id ActionID) []*v1.TaskAction {
	var out []*v1.TaskAction
	queue := []ActionID{id}
	for len(queue) > 0 && len(out) < maxDescendants {
		p := queue[0]
		queue = queue[1:]
		kids, _ := m.actions.ByIndex(indexParent, idKey(p.Project, p.Domain, p.Run, p.Name)) // unsorted: no list cached per descendant
		for _, k := range kids {
			out = append(out, k)
			queue = append(queue, IDOf(k))
		}
	}
	return out
}

// maxDescendants bounds a walk down a tree that hand-edited specs may
// have made cyclic.
const maxDescendants = 1 << 20

// DeleteObject deletes an action's object, that incarnation only (its uid
// is a precondition); one gone already is no error.
func (m *Manager) DeleteObject(ctx context.Context, ta *v1.TaskAction) error {
	err := m.client.FlyteV1().TaskActions(ta.Namespace).Delete(ctx, ta.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &ta.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s/%s: %w", ta.Namespace, ta.Name, err)
	}
	return nil
}
