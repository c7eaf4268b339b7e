// Package retention keeps the control plane to what is live: it deletes
// the objects of actions that finished more than the retention ago, once
// history holds their final view; from then on the action manager reads
// them from history.
package retention

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/failpoint"
	"taskactions/internal/history"
	flytev1 "taskactions/internal/kube/clientset/versioned/typed/api/v1"
	"taskactions/internal/pipeline"
	"taskactions/internal/taskactions"
)

// Retirer keeps the control plane to what is live: it deletes the object
// of an action that finished more than the retention ago, once history has
// its final view, and from then on reads come from history. It never
// deletes an object history has not recorded as terminal (the store says
// so, by uid, before each delete), children go before their parents (a
// parent waits while it has any child object), and an object with
// finalizers is only marked deleted, as for any client: whoever put the
// finalizer removes it.
type Retirer struct {
	cfg Config
}

// Actions is what the retirer reads of the action manager.
type Actions interface {
	// Cache holds every live action and its view.
	Cache() *pipeline.Cache[*v1.TaskAction, *taskactions.ActionUpdate]
	// Children are the cached direct children of an action.
	Children(ta *v1.TaskAction) []*v1.TaskAction
}

// History is what the retirer asks of the history store.
type History interface {
	// MarkRetired marks the actions retired, reporting for each whether
	// history holds it as terminal (uid included): only those may go.
	MarkRetired(ctx context.Context, recs []history.Action) ([]bool, error)
	// Purge drops the tombstones of deletions before the time.
	Purge(ctx context.Context, before time.Time) (int64, error)
}

// Config holds the retirer's dependencies and settings.
type Config struct {
	Actions Actions
	History History
	// Client deletes the objects.
	Client flytev1.TaskActionsGetter
	// After is the retention: how long a finished action stays live.
	After time.Duration
	// Retired, when set, is called for each deleted object (metrics).
	Retired func()
	Log     zerolog.Logger
	Now     func() time.Time // default time.Now
}

// New returns a retirer of actions finished more than cfg.After ago.
func New(cfg Config) *Retirer {
	if cfg.Retired == nil {
		cfg.Retired = func() {}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Retirer{cfg: cfg}
}

// tombstoneGrace is how long the tombstones of API deletions are kept: the
// deleted objects' last events have long arrived by then.
const tombstoneGrace = time.Hour

// Run sweeps until ctx ends, every quarter of the retention (between 1 s
// and 30 s).
func (r *Retirer) Run(ctx context.Context) error {
	every := min(max(r.cfg.After/4, time.Second), 30*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		r.Sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sweep retires what is due now and reports how many objects it deleted.
func (r *Retirer) Sweep(ctx context.Context) int {
	cutoff := r.cfg.Now().Add(-r.cfg.After)
	var due []*v1.TaskAction
	for _, ta := range r.cfg.Actions.Cache().All() {
		if r.due(ta, cutoff) {
			due = append(due, ta)
		}
	}
	n := 0
	for len(due) > 0 && ctx.Err() == nil {
		batch := due[:min(len(due), sweepBatch)]
		due = due[len(batch):]
		deleted, err := r.retire(ctx, batch)
		n += deleted
		if err != nil {
			r.cfg.Log.Warn().Err(err).Msg("retention: history not reachable; keeping the objects")
			break
		}
	}
	if _, err := r.cfg.History.Purge(ctx, r.cfg.Now().Add(-max(r.cfg.After, tombstoneGrace))); err != nil {
		r.cfg.Log.Warn().Err(err).Msg("retention: purging tombstones failed")
	}
	if n > 0 {
		r.cfg.Log.Debug().Int("retired", n).Msg("retention: retired finished actions")
	}
	return n
}

// sweepBatch is how many objects one history transaction marks retired.
const sweepBatch = 256

// retire marks a batch retired in history, then deletes the objects that
// history holds as finished.
func (r *Retirer) retire(ctx context.Context, tas []*v1.TaskAction) (int, error) {
	recs := make([]history.Action, len(tas))
	for i, ta := range tas {
		id := taskactions.IDOf(ta)
		recs[i] = history.Action{Project: id.Project, Domain: id.Domain, Run: id.Run, Name: id.Name, UID: string(ta.UID)}
	}
	recorded, err := r.cfg.History.MarkRetired(ctx, recs)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, ta := range tas {
		if !recorded[i] {
			continue // not in history as terminal yet: the worker has not recorded it
		}
		err = r.cfg.Client.TaskActions(ta.Namespace).Delete(ctx, ta.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &ta.UID},
		})
		if apierrors.IsNotFound(err) {
			continue // gone already; the cache has not seen it yet
		}
		if err != nil {
			r.cfg.Log.Warn().Err(err).Str("action", taskactions.IDOf(ta).String()).Msg("retention: delete failed")
			continue
		}
		failpoint.Hit(failpoint.Retired)
		r.cfg.Retired()
		n++
	}
	return n, nil
}

// due: finished before the cutoff, not being deleted, no child object
// left, and not Flyte's: Flyte's garbage collector ends the life of its
// actions. Whether history has its terminal status is asked by uid just
// before the delete (MarkRetired).
func (r *Retirer) due(ta *v1.TaskAction, cutoff time.Time) bool {
	if ta.DeletionTimestamp != nil || v1.EnqueuedByFlyte(ta) {
		return false
	}
	u := r.cfg.Actions.Cache().View(ta)
	if !u.Phase.Terminal() || !u.UpdatedAt.Before(cutoff) {
		return false
	}
	return len(r.cfg.Actions.Children(ta)) == 0
}
