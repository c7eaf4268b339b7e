package taskactions

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/failpoint"
	"taskactions/internal/history"
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
	m     *Manager
	after time.Duration
	log   zerolog.Logger
	// Retired counts deleted objects (for metrics and tests).
	Retired func()
}

// NewRetirer returns a retirer of actions finished more than after ago.
// The manager must have a history.
func NewRetirer(m *Manager, after time.Duration, log zerolog.Logger) *Retirer {
	return &Retirer{m: m, after: after, log: log, Retired: func() {}}
}

// tombstoneGrace is how long the tombstones of API deletions are kept: the
// deleted objects' last events have long arrived by then.
const tombstoneGrace = time.Hour

// Run sweeps until ctx ends, every quarter of the retention (between 1 s
// and 30 s).
func (r *Retirer) Run(ctx context.Context) error {
	every := min(max(r.after/4, time.Second), 30*time.Second)
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
	cutoff := r.m.Now().Add(-r.after)
	var due []*v1.TaskAction
	for _, ta := range r.m.actions.All() {
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
			r.log.Warn().Err(err).Msg("retention: history not reachable; keeping the objects")
			break
		}
	}
	if _, err := r.m.cfg.History.Purge(ctx, r.m.Now().Add(-max(r.after, tombstoneGrace))); err != nil {
		r.log.Warn().Err(err).Msg("retention: purging tombstones failed")
	}
	if n > 0 {
		r.log.Debug().Int("retired", n).Msg("retention: retired finished actions")
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
		id := IDOf(ta)
		recs[i] = history.Action{Project: id.Project, Domain: id.Domain, Run: id.Run, Name: id.Name, UID: string(ta.UID)}
	}
	recorded, err := r.m.cfg.History.MarkRetired(ctx, recs)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, ta := range tas {
		if !recorded[i] {
			continue // not in history as terminal yet: the worker has not recorded it
		}
		err = r.m.client.FlyteV1().TaskActions(ta.Namespace).Delete(ctx, ta.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &ta.UID},
		})
		if apierrors.IsNotFound(err) {
			continue // gone already; the cache has not seen it yet
		}
		if err != nil {
			r.log.Warn().Err(err).Str("action", IDOf(ta).String()).Msg("retention: delete failed")
			continue
		}
		failpoint.Hit(failpoint.Retired)
		r.Retired()
		n++
	}
	return n, nil
}

// due: finished before the cutoff, its terminal status recorded (this
// server's label), not being deleted, no child object left, and not
// Flyte's: Flyte's garbage collector ends the life of its actions.
func (r *Retirer) due(ta *v1.TaskAction, cutoff time.Time) bool {
	if ta.DeletionTimestamp != nil || ta.Labels[v1.LabelTerminalState] != "true" || v1.EnqueuedByFlyte(ta) {
		return false
	}
	u := r.m.actions.View(ta)
	if !u.Phase.Terminal() || !u.UpdatedAt.Before(cutoff) {
		return false
	}
	kids, _ := r.m.actions.ByIndex(indexParent, idKey(u.ID.Project, u.ID.Domain, u.ID.Run, u.ID.Name))
	return len(kids) == 0
}
