// Package notifier tells the run service about actions: each action is
// recorded on first sight and each phase change reported after that. At
// start it asks the run service once which live actions it already holds
// as finished, so that a restart does not report them again; nothing is
// written on the objects for it (a label would cost each action a write).
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
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	v1 "taskactions/api/v1"
	"taskactions/internal/failpoint"
	"taskactions/internal/pipeline"
	"taskactions/internal/runs"
	"taskactions/internal/taskactions"
)

// RunService is the run service as the notifier sees it.
type RunService interface {
	RecordAction(ctx context.Context, a runs.Action) error
	UpdateActionStatus(ctx context.Context, a runs.Action) error
	// Recorded is, by uid, the terminal phase of each live action the run
	// service holds as finished.
	Recorded(ctx context.Context) (map[types.UID]v1.Phase, error)
}

// Config holds the notifier's dependencies and settings.
type Config struct {
	// Runs is the run service; nil: nothing is reported (only Warm runs).
	Runs RunService
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
	restored map[types.UID]v1.Phase          // finished before this start, as the run service holds them
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
// It first reads what the run service holds as finished; if it cannot,
// every action is told again, which the run service keeps as it is.
func (n *Notifier) Run(ctx context.Context, ready func()) error {
	if n.cfg.Runs != nil {
		recorded, err := n.cfg.Runs.Recorded(ctx)
		if err != nil {
			n.cfg.Log.Warn().Err(err).Msg("could not read the finished actions from history: each is recorded again")
		}
		n.mu.Lock()
		n.restored = recorded
		n.mu.Unlock()
	}
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
	if ev.Type != watch.Deleted && n.wasRecorded(ta.UID, ev.View.Phase) {
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

// wasRecorded is true, once, for an action the run service held as
// finished in this phase when this start began: a restart or re-list must
// not replay it, nor warm its encoding for reads that may never come.
// From then on it is an action whose phase was told.
func (n *Notifier) wasRecorded(id types.UID, p v1.Phase) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	rp, ok := n.restored[id]
	if !ok {
		return false
	}
	delete(n.restored, id)
	if rp != p {
		return false
	}
	n.notified[id] = p
	return true
}

// notify records an action on first sight and reports each phase change
// after that.
func (n *Notifier) notify(ctx context.Context, ev taskactions.Event) error {
	ta, u := ev.Object, ev.View
	a := u.Record()
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
	if u.Phase.Terminal() && (!seen || prev != u.Phase) {
		failpoint.Hit(failpoint.Recorded)
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
		delete(n.restored, id)
	}
}

// Records is what the run service would record of every cached action
// (to fill a history store created empty beside them).
func Records(c *pipeline.Cache[*v1.TaskAction, *taskactions.ActionUpdate]) []runs.Action {
	all := c.All()
	out := make([]runs.Action, len(all))
	for i, ta := range all {
		out[i] = c.View(ta).Record()
	}
	return out
}
