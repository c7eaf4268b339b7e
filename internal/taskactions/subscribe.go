package taskactions

import (
	"context"

	v1 "taskactions/api/v1"
	"taskactions/internal/journal"
)

// Scope is what a subscription sees: every action of a run (Action empty),
// or one action and its direct children. It always names the run, so two
// runs with actions of the same names never see each other's events.
type Scope struct {
	Run    v1.RunID
	Action string
}

func (s Scope) topic() string {
	if s.Action == "" {
		return runTopic(s.Run.Project, s.Run.Domain, s.Run.Run)
	}
	return nodeTopic(s.Run.Project, s.Run.Domain, s.Run.Run, s.Action)
}

// Subscription delivers the updates of one scope.
type Subscription = journal.Subscription[*ActionUpdate]

// Start says how a subscription begins (resumed with a replay, or not).
type Start = journal.Start[*ActionUpdate]

// Subscribe opens a subscription. With after set and still covered by the
// journal, start.Replay holds exactly the updates missed since; otherwise
// snapshot holds the scope's current actions, consistent with start.Cursor:
// nothing is lost or repeated between the snapshot and the live updates.
// Like the reads, it first waits for this server's own writes to reach the
// cache. It opens no Kubernetes watch: the shared informer feeds every
// subscription. Close the subscription when done.
//
// The snapshot also holds the scope's actions retired to history (read
// after the live ones: they no longer change, so this cannot miss an
// update). When history does not answer, sub is nil (see sse.Source).
func (m *Manager) Subscribe(ctx context.Context, scope Scope, after *uint64) (sub *Subscription, start Start, snapshot []*ActionUpdate) {
	sub, start, snapshot = m.actions.Subscribe(ctx, scope.topic(), after, func() []*v1.TaskAction { return m.cached.scope(scope) })
	if !start.Resumed {
		var err error
		if snapshot, err = m.history.snapshot(ctx, scope, snapshot); err != nil {
			// No snapshot rather than one without the retired actions.
			m.cfg.Log.Warn().Err(err).Str("run", scope.Run.Run).Msg("stream snapshot: history read failed; the stream ends for its client to come back")
			sub.Close()
			return nil, start, nil
		}
	}
	return sub, start, snapshot
}
