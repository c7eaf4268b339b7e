// Package notifier tells the run service about actions: each action is
// recorded on first sight and each phase change reported after that, and
// once the run service holds an action's terminal phase the object is
// labelled (v1.LabelTerminalState), so that no later start reports it
// again and retention may retire it.
//
// It is fed by the action manager's events (taskactions.Config.OnEvent),
// which it must never hold up: the manager's one informer goroutine feeds
// every stream. So Observe only notes each object's latest event and
// queues its uid on a pipeline.KeyQueue, which holds a uid once however
// many events arrive, hands it to one worker at a time (each object's
// events are handled in order) and retries a failed notification with
// backoff. Coalescing is safe because the run service records an action's
// latest view, whichever phases it skipped.
package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	v1 "taskactions/api/v1"
	"taskactions/internal/failpoint"
	flytev1 "taskactions/internal/kube/clientset/versioned/typed/api/v1"
	"taskactions/internal/pipeline"
	"taskactions/internal/runs"
	"taskactions/internal/taskactions"
)

// RunService is the run service as the notifier sees it.
type RunService interface {
	RecordAction(ctx context.Context, a runs.Action) error
	UpdateActionStatus(ctx context.Context, a runs.Action) error
}

// Config holds the notifier's dependencies and settings.
type Config struct {
	// Runs is the run service; nil: nothing is reported (only Warm runs).
	Runs RunService
	// Client labels the actions whose terminal status was recorded.
	Client flytev1.TaskActionsGetter
	// Warm, when set, is given each changed action's latest update off the
	// informer's goroutine: the API passes its encoder, so that the first
	// list of a big run copies encodings instead of making them (10,000
	// take some 55 ms). Actions a restart finds finished are not warmed:
	// their encodings would cost memory for reads that may never come.
	Warm func(*taskactions.ActionUpdate)
	// Workers is the number of notifications in flight (default 8).
	Workers int
	Log     zerolog.Logger
}

// Notifier is safe for concurrent use. Observe may be called before Run
// (the events of the manager's first list wait for it) and after (they
// are dropped).
type Notifier struct {
	cfg     Config
	q       *pipeline.KeyQueue
	handled atomic.Int64

	mu       sync.Mutex
	latest   map[types.UID]taskactions.Event // not yet handled, the last per object
	notified map[types.UID]v1.Phase          // what the run service has been told
}

// New returns a notifier; Run runs it.
func New(cfg Config) *Notifier {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	return &Notifier{cfg: cfg, q: pipeline.NewKeyQueue("run-notifications", cfg.Workers, cfg.Log),
		latest: map[types.UID]taskactions.Event{}, notified: map[types.UID]v1.Phase{}}
}

// Observe notes an event; it never blocks.
func (n *Notifier) Observe(ev taskactions.Event) {
	if n.q.ShuttingDown() {
		return
	}
	uid := ev.Object.UID
	n.mu.Lock()
	n.latest[uid] = ev
	n.mu.Unlock()
	n.q.AddKey(string(uid))
}

// Run notifies until ctx ends, then waits for the notifications in flight.
func (n *Notifier) Run(ctx context.Context, ready func()) error {
	return n.q.Work(ctx, ready, n.reconcile)
}

// QueueDepth is the number of objects waiting for a worker.
func (n *Notifier) QueueDepth() int { return n.q.Len() }

// EventsHandled counts the events the workers have finished with.
func (n *Notifier) EventsHandled() int64 { return n.handled.Load() }

// reconcile handles the latest event of one object. A failed
// notification goes back (unless a newer event came meanwhile), for the
// queue to retry.
func (n *Notifier) reconcile(ctx context.Context, key string) error {
	uid := types.UID(key)
	n.mu.Lock()
	ev, ok := n.latest[uid]
	delete(n.latest, uid)
	n.mu.Unlock()
	if !ok {
		return nil
	}
	if err := n.handle(ctx, ev); err != nil {
		if ctx.Err() == nil {
			n.mu.Lock()
			if _, newer := n.latest[uid]; !newer {
				n.latest[uid] = ev
			}
			n.mu.Unlock()
		}
		return fmt.Errorf("notify the run service of %s/%s: %w", ev.Object.Namespace, ev.Object.Name, err)
	}
	n.handled.Add(1)
	return nil
}

func (n *Notifier) handle(ctx context.Context, ev taskactions.Event) error {
	ta := ev.Object
	// A deletion always goes to the run service: the action leaves its run.
	if ev.Type != watch.Deleted && recorded(ta) {
		n.setNotified(ta.UID, "", false)
		return nil
	}
	if n.cfg.Warm != nil && ev.Type != watch.Deleted {
		n.cfg.Warm(ev.View)
	}
	if n.cfg.Runs == nil {
		return nil
	}
	return n.notify(ctx, ev)
}

// recorded is true for actions whose terminal status the run service
// already has: a restart or re-list must not replay them. They still
// serve snapshots and lists. Only this server's label says so: Flyte's
// (flyte.org/terminal-status-recorded) says that Flyte's run service has
// it, which is no reason to miss it here, and where earlier versions of
// this server set Flyte's label, the action is recorded once more
// (history keeps a terminal status as it is) and then labelled ours.
func recorded(ta *v1.TaskAction) bool {
	return ta.Labels[v1.LabelTerminalState] == "true"
}

// notify records an action on first sight and reports each phase change
// after that. Once the run service has accepted a terminal phase the
// object is labelled so that no later start repeats it.
func (n *Notifier) notify(ctx context.Context, ev taskactions.Event) error {
	ta, u := ev.Object, ev.View
	a := Record(u)
	prev, seen := n.phaseNotified(ta.UID)
	var err error
	switch {
	case ev.Type == watch.Deleted:
		err = n.cfg.Runs.UpdateActionStatus(ctx, a)
	case !seen:
		err = n.cfg.Runs.RecordAction(ctx, a)
	case prev != u.Phase:
		err = n.cfg.Runs.UpdateActionStatus(ctx, a)
	}
	if err != nil {
		return err
	}
	if ev.Type == watch.Deleted {
		n.setNotified(ta.UID, "", false)
		return nil
	}
	n.setNotified(ta.UID, u.Phase, true)
	// Flyte's actions carry no bookkeeping of ours: a restart records
	// their terminal status again, which history keeps as it is.
	if u.Phase.Terminal() && (!seen || prev != u.Phase) && !v1.EnqueuedByFlyte(ta) {
		failpoint.Hit(failpoint.Recorded)
		if err := n.markRecorded(ctx, ta); err != nil {
			// Not retried by the queue: the run service has the status, and
			// a restart that finds no label records it again, idempotently.
			n.cfg.Log.Warn().Err(err).Str("action", ta.Namespace+"/"+ta.Name).Msg("could not mark terminal status recorded")
			return nil
		}
		failpoint.Hit(failpoint.Labelled)
	}
	return nil
}

func (n *Notifier) phaseNotified(id types.UID) (v1.Phase, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.notified[id]
	return p, ok
}

func (n *Notifier) setNotified(id types.UID, p v1.Phase, known bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if known {
		n.notified[id] = p
	} else {
		delete(n.notified, id)
	}
}

// markRecorded sets the terminal-recorded label with a merge patch (no
// read-modify-write, so it cannot conflict with status writes), retrying
// briefly: this is the last chance before a restart would notify the run
// service again. The uid in the patch is a precondition: a new object
// under the same name is not marked.
func (n *Notifier) markRecorded(ctx context.Context, ta *v1.TaskAction) error {
	patch := []byte(`{"metadata":{"uid":"` + string(ta.UID) + `","labels":{"` + v1.LabelTerminalState + `":"true"}}}`)
	var err error
	for attempt, wait := 0, 100*time.Millisecond; attempt < 4; attempt, wait = attempt+1, wait*4 {
		_, err = n.cfg.Client.TaskActions(ta.Namespace).Patch(ctx, ta.Name, types.MergePatchType, patch, metav1.PatchOptions{})
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

// Record is what the run service records of an update: with the action's
// view, which history serves once the object is retired.
func Record(u *taskactions.ActionUpdate) runs.Action {
	view, _ := json.Marshal(&u.Action)
	return runs.Action{
		Project: u.ID.Project, Domain: u.ID.Domain, Run: u.ID.Run, Name: u.ID.Name,
		Parent: u.Parent, UID: u.UID, Phase: u.Phase,
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, View: view, Deleted: u.Deleted,
	}
}

// Records is what the run service would record of every cached action
// (to fill a history store created empty beside them).
func Records(c *pipeline.Cache[*v1.TaskAction, *taskactions.ActionUpdate]) []runs.Action {
	all := c.All()
	out := make([]runs.Action, len(all))
	for i, ta := range all {
		out[i] = Record(c.View(ta))
	}
	return out
}
