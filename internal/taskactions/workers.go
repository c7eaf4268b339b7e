package taskactions

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/workqueue"

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

// workers tell the run service about actions, for one
// StartWatching..StopWatching lifetime. The informer's handler must never
// wait for them (it feeds every stream), so it only notes each object's
// latest event and puts its uid in a client-go workqueue: the queue holds
// a uid once however many events arrive, hands one uid to one worker at a
// time (so each object's events are handled in order), and retries a
// failed notification with backoff. Coalescing is safe because the run
// service records an action's latest view, whichever phases it skipped.
type workers struct {
	ctx    context.Context
	cancel context.CancelFunc
	q      workqueue.TypedRateLimitingInterface[types.UID]
	wg     sync.WaitGroup

	mu       sync.Mutex
	latest   map[types.UID]workItem // events not yet handled, the last per object
	notified map[types.UID]v1.Phase // what the run service has been told
}

func (m *Manager) startWorkers() *workers {
	ctx, cancel := context.WithCancel(context.Background())
	w := &workers{ctx: ctx, cancel: cancel,
		q: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[types.UID](),
			workqueue.TypedRateLimitingQueueConfig[types.UID]{Name: "run-notifications"}),
		latest: map[types.UID]workItem{}, notified: map[types.UID]v1.Phase{}}
	for range m.cfg.Workers {
		w.wg.Go(func() {
			for m.handleNext(w) {
			}
		})
	}
	m.running.Store(w)
	return w
}

func (m *Manager) stopWorkers(w *workers) {
	m.running.Store(nil)
	w.cancel()
	w.q.ShutDown()
	w.wg.Wait()
}

// add notes an event; it never blocks.
func (w *workers) add(item workItem) {
	w.mu.Lock()
	w.latest[item.ta.UID] = item
	w.mu.Unlock()
	w.q.Add(item.ta.UID)
}

// handleNext handles the latest event of one object; false once the queue
// is shut down.
func (m *Manager) handleNext(w *workers) bool {
	id, shutdown := w.q.Get()
	if shutdown {
		return false
	}
	defer w.q.Done(id)
	w.mu.Lock()
	item, ok := w.latest[id]
	delete(w.latest, id)
	w.mu.Unlock()
	if !ok {
		return true
	}
	if err := m.handleTaskActionEvent(w.ctx, w, item); err != nil && w.ctx.Err() == nil {
		m.cfg.Log.Warn().Err(err).Str("action", keyOf(item.ta.Namespace, item.ta.Name)).Msg("run service notification failed; retrying")
		w.mu.Lock()
		if _, newer := w.latest[id]; !newer {
			w.latest[id] = item
		}
		w.mu.Unlock()
		w.q.AddRateLimited(id)
		return true
	}
	w.q.Forget(id)
	m.handled.Add(1)
	return true
}

func (w *workers) phaseNotified(id types.UID) (v1.Phase, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.notified[id]
	return p, ok
}

func (w *workers) setNotified(id types.UID, p v1.Phase, known bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if known {
		w.notified[id] = p
	} else {
		delete(w.notified, id)
	}
}

// depth is the number of objects waiting for a worker.
func (w *workers) depth() int { return w.q.Len() }

func (m *Manager) handleTaskActionEvent(ctx context.Context, w *workers, item workItem) error {
	// A deletion always goes to the run service: the action leaves its run.
	if item.eventType != watch.Deleted && shouldSkipTaskAction(item.ta) {
		w.setNotified(item.ta.UID, "", false)
		return nil
	}
	if m.cfg.Warm != nil && item.eventType != watch.Deleted {
		m.cfg.Warm(item.update)
	}
	if m.cfg.Notifier == nil {
		return nil
	}
	return m.notifyRunService(ctx, w, item.ta, item.update, item.eventType)
}

// shouldSkipTaskAction is true for actions whose terminal status the run
// service already has: a restart or re-list must not replay them. They
// still serve snapshots and lists. Only this server's label says so:
// Flyte's (flyte.org/terminal-status-recorded) says that Flyte's run
// service has it, which is no reason to miss it here, and where earlier
// versions of this server set Flyte's label, the action is recorded once
// more (history keeps a terminal status as it is) and then labelled ours.
func shouldSkipTaskAction(ta *v1.TaskAction) bool {
	return ta.Labels[v1.LabelTerminalState] == "true"
}

// notifyRunService records an action on first sight and reports each phase
// change after that. Once the run service has accepted a terminal phase the
// object is labelled so that no later start repeats it. A failed call is
// returned, for the queue to retry.
func (m *Manager) notifyRunService(ctx context.Context, w *workers, ta *v1.TaskAction, u *ActionUpdate, eventType watch.EventType) error {
	a := runsAction(u)
	prev, seen := w.phaseNotified(ta.UID)
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
		return err
	}
	if eventType == watch.Deleted {
		w.setNotified(ta.UID, "", false)
		return nil
	}
	w.setNotified(ta.UID, u.Phase, true)
	// Flyte's actions carry no bookkeeping of ours: a restart records
	// their terminal status again, which history keeps as it is.
	if u.Phase.Terminal() && (!seen || prev != u.Phase) && !v1.EnqueuedByFlyte(ta) {
		failpoint.Hit(failpoint.Recorded)
		if err := m.markTerminalStatusRecorded(ctx, ta); err != nil {
			// Not retried by the queue: the run service has the status, and
			// a restart that finds no label records it again, idempotently.
			m.cfg.Log.Warn().Err(err).Str("action", keyOf(ta.Namespace, ta.Name)).Msg("could not mark terminal status recorded")
			return nil
		}
		failpoint.Hit(failpoint.Labelled)
	}
	return nil
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
