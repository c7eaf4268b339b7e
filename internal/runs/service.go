// Package runs is the run service: it keeps a summary per run (the root
// action's phase, how many actions are in each phase, when the run started
// and ended), fed by the action manager's RecordAction and
// UpdateActionStatus notifications, and publishes summary changes for the
// project-domain streams.
//
// It is in memory. At start it is restored from the actions the manager
// lists; durable history is a later concern and would sit behind the same
// methods.
package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync"
	"time"

	v1 "taskactions/api/v1"
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
	Deleted                    bool
}

// RunID names a run.
type RunID struct{ Project, Domain, Run string }

// Summary is the state of one run.
type Summary struct {
	ID          RunID
	Phase       v1.Phase // the root action's; UNSPECIFIED until it is seen
	ActionCount int
	PhaseCounts map[v1.Phase]int
	StartedAt   time.Time
	EndedAt     *time.Time
}

// Event is a published summary change. It is shared by every subscriber.
type Event struct {
	Summary Summary
	// Deleted: the run's last action was deleted; the run is gone.
	Deleted bool
	// Wire memoizes the stream encoding, so it is done once.
	Wire journal.Encoded
}

type actionState struct {
	uid       string
	phase     v1.Phase
	createdAt time.Time
	updatedAt time.Time
}

type runState struct {
	actions map[string]*actionState
	root    *actionState
	counts  map[v1.Phase]int
	endedAt *time.Time
}

// Service is safe for concurrent use.
type Service struct {
	mu      sync.Mutex
	runs    map[RunID]*runState
	seq     uint64
	journal *journal.Journal[*Event]
}

// New returns an empty run service. Stream cursors carry a random epoch, so
// a cursor from before a restart is recognised as such.
func New(cfg journal.Config) *Service {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	cfg.Epoch = hex.EncodeToString(b)
	s := &Service{runs: map[RunID]*runState{}, journal: journal.New[*Event](cfg)}
	s.journal.SetFloor(0)
	return s
}

// RecordAction notes an action the manager saw for the first time.
func (s *Service) RecordAction(_ context.Context, a Action) error {
	s.apply(a)
	return nil
}

// UpdateActionStatus notes a phase change. Like RecordAction it is
// idempotent and tolerates reordering: a terminal phase is never replaced,
// an older update never replaces a newer one, and a deletion of another
// incarnation of the name is ignored.
func (s *Service) UpdateActionStatus(_ context.Context, a Action) error {
	s.apply(a)
	return nil
}

// Restore loads the current state of actions, at start, from the
// manager's cache: the actions whose terminal status was recorded before
// a restart are not notified again, so this is how their runs come back.
func (s *Service) Restore(actions []Action) {
	for _, a := range actions {
		s.apply(a)
	}
}

func (s *Service) apply(a Action) {
	id := RunID{a.Project, a.Domain, a.Run}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[id]
	if r == nil {
		r = &runState{actions: map[string]*actionState{}, counts: map[v1.Phase]int{}}
	}
	if !r.update(a) {
		return
	}
	ev := &Event{Summary: r.summary(id)}
	if len(r.actions) == 0 {
		delete(s.runs, id)
		ev.Deleted = true
	} else {
		s.runs[id] = r
	}
	s.seq++
	s.journal.Publish(journal.Entry[*Event]{
		Cursor: s.seq, Key: id.Run, Topics: []string{topic(a.Project, a.Domain)}, Value: ev,
	})
}

// update applies a to the run and reports whether anything changed. A
// deleted action leaves the run.
func (r *runState) update(a Action) bool {
	st := r.actions[a.Name]
	switch {
	case a.Deleted:
		// Only the incarnation that was deleted goes: a late deletion of
		// an old one must not take a new one along.
		if st == nil || st.uid != a.UID {
			return false
		}
		r.counts[st.phase]--
		delete(r.actions, a.Name)
		if r.root == st {
			r.root, r.endedAt = nil, nil
		}
		return true
	case st == nil:
		st = &actionState{}
		r.actions[a.Name] = st
	case st.uid != a.UID:
		// Another incarnation of the name. Only a newer one replaces it.
		if a.CreatedAt.Before(st.createdAt) {
			return false
		}
		r.counts[st.phase]--
	case st.phase.Terminal(), a.UpdatedAt.Before(st.updatedAt), st.phase == a.Phase:
		return false
	default:
		r.counts[st.phase]--
	}
	*st = actionState{uid: a.UID, phase: a.Phase, createdAt: a.CreatedAt, updatedAt: a.UpdatedAt}
	r.counts[st.phase]++
	if a.Parent == "" {
		r.root = st
		r.endedAt = nil // a new incarnation of the root may be running again
		if st.phase.Terminal() {
			t := a.UpdatedAt
			r.endedAt = &t
		}
	}
	return true
}

func (r *runState) summary(id RunID) Summary {
	s := Summary{ID: id, Phase: v1.PhaseUnspecified, ActionCount: len(r.actions), PhaseCounts: map[v1.Phase]int{}}
	for p, n := range r.counts {
		if n > 0 {
			s.PhaseCounts[p] = n
		}
	}
	if r.root != nil {
		s.Phase = r.root.phase
		s.StartedAt = r.root.createdAt
		s.EndedAt = r.endedAt
	} else {
		for _, a := range r.actions {
			if s.StartedAt.IsZero() || a.createdAt.Before(s.StartedAt) {
				s.StartedAt = a.createdAt
			}
		}
	}
	return s
}

// List returns the runs of a project and domain, newest first.
func (s *Service) List(project, domain string) []Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listLocked(project, domain)
}

func (s *Service) listLocked(project, domain string) []Summary {
	var out []Summary
	for id, r := range s.runs {
		if id.Project == project && id.Domain == domain {
			out = append(out, r.summary(id))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.After(out[j].StartedAt)
		}
		return out[i].ID.Run < out[j].ID.Run
	})
	return out
}

// Get returns one run.
func (s *Service) Get(id RunID) (Summary, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return Summary{}, false
	}
	return r.summary(id), true
}

// Subscribe opens a subscription to the run summaries of a project and
// domain. When it cannot resume from after, snapshot holds the current
// summaries to send first.
func (s *Service) Subscribe(project, domain string, after *uint64) (*journal.Subscription[*Event], journal.Start[*Event], []Summary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var snap []Summary
	sub, start := s.journal.Subscribe(topic(project, domain), after, func() uint64 {
		snap = s.listLocked(project, domain)
		return s.seq
	})
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
