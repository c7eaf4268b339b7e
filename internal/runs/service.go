// Package runs is the run service: it records every action the manager
// tells it about in the history store, which keeps each run's summary in
// step (the root action's phase, how many actions are in each phase, when
// the run started and ended), and publishes summary changes for the
// project-domain streams.
//
// History is the truth for summaries: an action retired from the control
// plane still counts in its run, and a restart loses nothing.
package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/types"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/journal"
)

// Action is what the manager tells the run service about one action.
type Action struct {
	Project, Domain, Run, Name string
	Parent                     string // empty for the root
	UID                        string // tells incarnations of one name apart
	Phase                      v1.Phase
	CreatedAt                  time.Time
	UpdatedAt                  time.Time // when Phase was entered
	// View is the action's public view as JSON, kept as its final state.
	View json.RawMessage
	// Deleted: the object is gone from the control plane (retired, or
	// deleted by another client). History keeps its last state; only a
	// deletion through the API (DeleteRun, DeleteActions) removes it.
	Deleted bool
}

// Summary is the state of one run.
type Summary struct {
	ID          v1.RunID
	Phase       v1.Phase // the root action's; UNSPECIFIED until it is seen
	ActionCount int
	PhaseCounts map[v1.Phase]int
	StartedAt   time.Time
	EndedAt     *time.Time
}

// Event is a published summary change. It is shared by every subscriber.
type Event struct {
	Summary Summary
	// Deleted: the run was deleted; it is gone.
	Deleted bool
	// Wire memoizes the stream encoding, so it is done once.
	Wire journal.Encoded
}

// SnapshotRuns bounds the snapshot of a summaries stream: the newest runs
// of the project and domain. Older ones are read page by page (List).
const SnapshotRuns = 1000

// Service is safe for concurrent use. Writes are serialized, so that the
// order of published summaries is the order of the store's commits.
type Service struct {
	mu    lock // orders commits and publishing
	store *history.Store

	qmu        sync.Mutex
	queue      []*pending
	committing bool

	seq      uint64
	journal  *journal.Journal[*Event]
	projects projects
	log      zerolog.Logger
}

// New returns the run service over store. Stream cursors carry a random
// epoch, so a cursor from before a restart is recognised as such.
func New(store *history.Store, cfg journal.Config, log zerolog.Logger) *Service {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	cfg.Epoch = hex.EncodeToString(b)
	s := &Service{mu: newLock(), store: store, journal: journal.New[*Event](cfg), log: log}
	s.journal.SetFloor(0)
	s.projects.journal = journal.New[*ProjectEvent](cfg)
	s.projects.journal.SetFloor(0)
	return s
}

// Store is the history store the service writes.
func (s *Service) Store() *history.Store { return s.store }

// RecordAction notes an action the manager saw for the first time.
func (s *Service) RecordAction(ctx context.Context, a Action) error { return s.record(ctx, a) }

// UpdateActionStatus notes a change. Like RecordAction it is idempotent and
// tolerates reordering (see history.Store.Record).
func (s *Service) UpdateActionStatus(ctx context.Context, a Action) error { return s.record(ctx, a) }

// Recorded returns, by uid, the terminal phase of every live action
// history already holds as finished: a starting notifier need not tell it
// again (history.Store.TerminalLive).
func (s *Service) Recorded(ctx context.Context) (map[types.UID]v1.Phase, error) {
	return s.store.TerminalLive(ctx)
}

// record queues a change for the next commit and waits for it. Changes
// are committed in groups (a commit costs more than its statements): the
// caller that finds no commit under way commits everything queued, batch
// after batch, while the others wait for theirs.
func (s *Service) record(ctx context.Context, a Action) error {
	p := &pending{a: historyAction(a), done: make(chan error, 1)}
	s.qmu.Lock()
	s.queue = append(s.queue, p)
	lead := !s.committing
	s.committing = true
	s.qmu.Unlock()
	if lead {
		s.commitQueued(ctx)
	}
	return <-p.done
}

// pending is a change waiting for a commit.
type pending struct {
	a    history.Action
	done chan error
}

// maxBatch bounds one commit.
const maxBatch = 512

func (s *Service) commitQueued(ctx context.Context) {
	for {
		s.qmu.Lock()
		n := min(len(s.queue), maxBatch)
		batch := s.queue[:n:n]
		s.queue = s.queue[n:]
		if n == 0 {
			s.committing = false
			s.qmu.Unlock()
			return
		}
		s.qmu.Unlock()
		s.commit(ctx, batch)
	}
}

// commit records a batch in one transaction and publishes the summaries
// it changed, in order.
func (s *Service) commit(ctx context.Context, batch []*pending) {
	as := make([]history.Action, len(batch))
	for i, p := range batch {
		as[i] = p.a
	}
	s.mu.Lock()
	rs, err := s.store.RecordAll(ctx, as)
	if err == nil {
		for _, r := range rs {
			if r.Changed {
				s.publishLocked(summaryOf(r.Run), false)
				s.runChangedLocked(r)
			}
		}
	}
	s.mu.Unlock()
	for _, p := range batch {
		p.done <- err
	}
}

// Restore records the actions the control plane holds, into a history
// store that was just created: the actions a control plane held before
// there was a store get into history at once, in batches. held is only
// called then: a restart need not build every action's record.
func (s *Service) Restore(ctx context.Context, held func() []Action) error {
	if !s.store.Created {
		return nil
	}
	actions := held()
	for len(actions) > 0 {
		chunk := actions[:min(len(actions), maxBatch)]
		actions = actions[len(chunk):]
		batch := make([]*pending, len(chunk))
		for i, a := range chunk {
			batch[i] = &pending{a: historyAction(a), done: make(chan error, 1)}
		}
		s.commit(ctx, batch)
		if err := <-batch[0].done; err != nil {
			return fmt.Errorf("restore history: %w", err)
		}
	}
	return nil
}

// DeleteRun removes a run from history. live are the actions the control
// plane still holds, which history may not have seen yet: their late
// events must not bring the run back. It reports whether there was
// anything to delete.
func (s *Service) DeleteRun(ctx context.Context, id v1.RunID, live []Action) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	run, inHistory, err := s.store.DeleteRun(ctx, id, historyActions(live))
	if err != nil {
		return false, err
	}
	// The stream's last word on the run is its last summary, marked
	// deleted; blank only for a run history never had.
	last := Summary{ID: id, Phase: v1.PhaseUnspecified, PhaseCounts: map[v1.Phase]int{}}
	if inHistory {
		last = summaryOf(run)
	}
	existed := inHistory || len(live) > 0
	if existed {
		s.publishLocked(last, true)
	}
	if inHistory {
		s.runDeletedLocked(ctx, id)
	}
	return existed, nil
}

// DeleteActions removes an action and its descendants from history (live
// as for DeleteRun).
func (s *Service) DeleteActions(ctx context.Context, id v1.RunID, name string, live []Action) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	run, gone, err := s.store.DeleteActions(ctx, id, name, historyActions(live))
	if err != nil {
		return err
	}
	sum := summaryOf(run)
	sum.ID = id
	s.publishLocked(sum, gone)
	if gone {
		s.runDeletedLocked(ctx, id)
	}
	return nil
}

func (s *Service) publishLocked(sum Summary, deleted bool) {
	s.seq++
	s.journal.Publish(journal.Entry[*Event]{
		Cursor: s.seq, Key: sum.ID.Run, Topics: []string{topic(sum.ID.Project, sum.ID.Domain)},
		Value: &Event{Summary: sum, Deleted: deleted},
	})
}

// List returns a page of the runs of a project and domain, newest first,
// and the continue token of the next page ("" at the end).
func (s *Service) List(ctx context.Context, q history.RunQuery) ([]Summary, string, error) {
	limit := history.PageSize(q.Limit)
	q.Limit = limit + 1
	rs, err := s.store.Runs(ctx, q)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(rs) > limit {
		rs = rs[:limit]
		next = rs[limit-1].Key().Token()
	}
	out := make([]Summary, len(rs))
	for i := range rs {
		out[i] = summaryOf(rs[i])
	}
	return out, next, nil
}

// Get returns one run (history.ErrNotFound when there is none).
func (s *Service) Get(ctx context.Context, id v1.RunID) (Summary, error) {
	r, err := s.store.Run(ctx, id)
	if err != nil {
		return Summary{}, err
	}
	return summaryOf(r), nil
}

// Subscribe opens a subscription to the run summaries of a project and
// domain. When it cannot resume from after, snapshot holds the newest
// SnapshotRuns summaries to send first, consistent with the cursor: the
// store is read under the same lock as writes publish. When the store
// does not answer, the subscription is nil: no snapshot rather than a
// wrong one.
func (s *Service) Subscribe(ctx context.Context, project, domain string, after *uint64) (*journal.Subscription[*Event], journal.Start[*Event], []Summary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var snap []Summary
	var err error
	sub, start := s.journal.Subscribe(topic(project, domain), after, func() uint64 {
		snap, _, err = s.List(ctx, history.RunQuery{Project: project, Domain: domain, Limit: SnapshotRuns})
		return s.seq
	})
	if err != nil {
		s.log.Warn().Err(err).Str("project", project).Str("domain", domain).Msg("runs snapshot from history failed; the stream ends for its client to come back")
		sub.Close()
		return nil, start, nil
	}
	return sub, start, snap
}

// Cursors formats and parses stream cursors of this service.
func (s *Service) Cursors() interface {
	FormatCursor(uint64) string
	ParseCursor(string) (uint64, bool)
} {
	return s.journal
}

func topic(project, domain string) string { return project + "/" + domain }

func historyAction(a Action) history.Action {
	return history.Action{
		Project: a.Project, Domain: a.Domain, Run: a.Run, Name: a.Name, Parent: a.Parent, UID: a.UID,
		Phase: string(a.Phase), CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, View: a.View, Retired: a.Deleted,
	}
}

func historyActions(as []Action) []history.Action {
	out := make([]history.Action, len(as))
	for i, a := range as {
		out[i] = historyAction(a)
	}
	return out
}

func summaryOf(r history.Run) Summary {
	s := Summary{
		ID: r.ID, Phase: v1.Phase(r.Phase), ActionCount: r.ActionCount,
		PhaseCounts: make(map[v1.Phase]int, len(r.PhaseCounts)), StartedAt: r.StartedAt, EndedAt: r.EndedAt,
	}
	if s.Phase == "" {
		s.Phase = v1.PhaseUnspecified
	}
	for p, n := range r.PhaseCounts {
		s.PhaseCounts[v1.Phase(p)] = n
	}
	return s
}
