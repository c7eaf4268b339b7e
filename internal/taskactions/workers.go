package taskactions

import (
	"context"
	"encoding/json"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	v1 "taskactions/api/v1"
	"taskactions/internal/failpoint"
	"taskactions/internal/runs"
)

// workItem is one informer event on its way to a worker.
type workItem struct {
	eventType watch.EventType
	ta        *v1.TaskAction
	update    *ActionUpdate
}

// worker handles the events of the objects hashed to its queue, in order.
// What it has told the run service lives in its own map: no other worker
// sees these objects, so no lock is needed.
func (m *Manager) worker(ctx context.Context, q <-chan workItem) {
	notified := map[uid]v1.Phase{}
	for item := range q {
		m.handleTaskActionEvent(ctx, notified, item)
		m.handled.Add(1)
	}
}

func (m *Manager) handleTaskActionEvent(ctx context.Context, notified map[uid]v1.Phase, item workItem) {
	// A deletion always goes to the run service: the action leaves its run.
	if item.eventType != watch.Deleted && shouldSkipTaskAction(item.ta) {
		delete(notified, item.ta.UID)
		return
	}
	if m.cfg.Notifier != nil {
		m.notifyRunService(ctx, notified, item.ta, item.update, item.eventType)
	}
}

// shouldSkipTaskAction is true for actions whose terminal status the run
// service already has: a restart or re-list must not replay them. They
// still serve snapshots and lists.
func shouldSkipTaskAction(ta *v1.TaskAction) bool {
	return ta.Labels[v1.LabelTerminalState] == "true"
}

// notifyRunService records an action on first sight and reports each phase
// change after that. Once the run service has accepted a terminal phase the
// object is labelled so that no later start repeats it. A failed call is
// retried with the object's next event.
func (m *Manager) notifyRunService(ctx context.Context, notified map[uid]v1.Phase, ta *v1.TaskAction, u *ActionUpdate, eventType watch.EventType) {
	a := runsAction(u)
	prev, seen := notified[ta.UID]
	var err error
	switch {
	case eventType == watch.Deleted:
		err = m.cfg.Notifier.UpdateActionStatus(ctx, a)
	case !seen:
		err = m.cfg.Notifier.RecordAction(ctx, a)
	case prev != u.Phase:
		err = m.cfg.Notifier.UpdateActionStatus(ctx, a)
	}
	if err != nil {
		m.cfg.Log.Warn().Err(err).Str("action", keyOf(ta.Namespace, ta.Name)).Msg("run service notification failed")
		return
	}
	if eventType == watch.Deleted {
		delete(notified, ta.UID)
		return
	}
	notified[ta.UID] = u.Phase
	if u.Phase.Terminal() && (!seen || prev != u.Phase) {
		failpoint.Hit(failpoint.Recorded)
		if err := m.markTerminalStatusRecorded(ctx, ta); err != nil {
			m.cfg.Log.Warn().Err(err).Str("action", keyOf(ta.Namespace, ta.Name)).Msg("could not mark terminal status recorded")
			return
		}
		failpoint.Hit(failpoint.Labelled)
	}
}

// runsAction is what the run service records of an update: with the
// action's view, which history serves once the object is retired.
func runsAction(u *ActionUpdate) runs.Action {
	view, _ := json.Marshal(&u.Action)
	return runs.Action{
		Project: u.ID.Project, Domain: u.ID.Domain, Run: u.ID.Run, Name: u.ID.Name,
		Parent: u.Parent, UID: u.UID, Phase: u.Phase,
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, View: view, Deleted: u.Deleted,
	}
}

// markTerminalStatusRecorded sets the terminal-recorded label with a merge
// patch (no read-modify-write, so it cannot conflict with status writes),
// retrying briefly: this is the last chance before a restart would notify
// the run service again. The uid in the patch is a precondition: a new
// object under the same name is not marked.
func (m *Manager) markTerminalStatusRecorded(ctx context.Context, ta *v1.TaskAction) error {
	patch := []byte(`{"metadata":{"uid":"` + string(ta.UID) + `","labels":{"` + v1.LabelTerminalState + `":"true"}}}`)
	var err error
	for attempt, wait := 0, 100*time.Millisecond; attempt < 4; attempt, wait = attempt+1, wait*4 {
		_, err = m.client.FlyteV1().TaskActions(ta.Namespace).Patch(ctx, ta.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}
