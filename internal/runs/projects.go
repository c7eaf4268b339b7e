package runs

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/journal"
)

// Project is a project and domain with runs.
type Project = history.Project

// ProjectEvent is a published change of a project and domain. It is
// shared by every subscriber.
type ProjectEvent struct {
	Project Project
	// Deleted: its last run was deleted; it is gone.
	Deleted bool
	Wire    journal.Encoded
}

// projectsTopic is the one topic of the projects journal: every
// subscriber gets every project, and the API filters what it may read.
const projectsTopic = "projects"

// activityStep is how far a project's last activity moves before it is
// published again: a busy project is not a stream of its own.
const activityStep = time.Second

// projects is the service's view of every project and domain with runs:
// read from history on first use, then kept in step with each commit and
// deletion under Service.mu. A deleted run lowers the count but leaves
// the last activity as it was (history would need a scan to lower it).
//
// Its own mutex (taken under Service.mu by writers) lets a list of what is
// loaded answer while a commit waits for the store.
type projects struct {
	mu      sync.Mutex
	loaded  bool
	byKey   map[string]*projectState
	seq     uint64
	journal *journal.Journal[*ProjectEvent]
}

type projectState struct {
	Project
	published time.Time // the last activity last published
}

// Projects returns every project and domain with runs, sorted: from
// memory once loaded; the first time from the store, under the service's
// lock, which it waits for no longer than a read (history.ErrUnavailable).
func (s *Service) Projects(ctx context.Context) ([]Project, error) {
	p := &s.projects
	p.mu.Lock()
	if p.loaded {
		defer p.mu.Unlock()
		return s.projectListLocked(), nil
	}
	p.mu.Unlock()
	if err := s.mu.LockCtx(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if err := s.loadProjectsLocked(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return s.projectListLocked(), nil
}

// SubscribeProjects opens a subscription to the projects; when it cannot
// resume from after, snapshot is every project to send first (nil
// subscription: the store does not answer).
func (s *Service) SubscribeProjects(ctx context.Context, after *uint64) (*journal.Subscription[*ProjectEvent], journal.Start[*ProjectEvent], []Project) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var snap []Project
	var err error
	sub, start := s.projects.journal.Subscribe(projectsTopic, after, func() uint64 {
		err = s.loadProjectsLocked(ctx)
		s.projects.mu.Lock()
		defer s.projects.mu.Unlock()
		snap = s.projectListLocked()
		return s.projects.seq
	})
	if err != nil { // as Subscribe: no snapshot rather than a wrong one
		s.log.Warn().Err(err).Msg("projects snapshot from history failed; the stream ends for its client to come back")
		sub.Close()
		return nil, start, nil
	}
	return sub, start, snap
}

// ProjectCursors formats and parses the cursors of the projects stream.
func (s *Service) ProjectCursors() interface {
	FormatCursor(uint64) string
	ParseCursor(string) (uint64, bool)
} {
	return s.projects.journal
}

// loadProjectsLocked reads the projects from the store, under Service.mu.
func (s *Service) loadProjectsLocked(ctx context.Context) error {
	p := &s.projects
	p.mu.Lock()
	loaded := p.loaded
	p.mu.Unlock()
	if loaded {
		return nil
	}
	ps, err := s.store.Projects(ctx)
	if err != nil {
		return err
	}
	byKey := make(map[string]*projectState, len(ps))
	for _, pr := range ps {
		byKey[topic(pr.Project, pr.Domain)] = &projectState{Project: pr, published: pr.LastActivity}
	}
	p.mu.Lock()
	p.byKey, p.loaded = byKey, true
	p.mu.Unlock()
	return nil
}

// projectListLocked lists what is loaded, under projects.mu.
func (s *Service) projectListLocked() []Project {
	out := make([]Project, 0, len(s.projects.byKey))
	for _, st := range s.projects.byKey {
		out = append(out, st.Project)
	}
	slices.SortFunc(out, func(a, b Project) int {
		return cmp.Or(cmp.Compare(a.Project, b.Project), cmp.Compare(a.Domain, b.Domain))
	})
	return out
}

// runChangedLocked follows a committed run change into its project
// (under Service.mu).
func (s *Service) runChangedLocked(r history.Recorded) {
	p := &s.projects
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded {
		return // the first read will see it in history
	}
	id := r.Run.ID
	st := p.byKey[topic(id.Project, id.Domain)]
	isNew := st == nil
	if isNew {
		st = &projectState{Project: Project{Project: id.Project, Domain: id.Domain}}
		p.byKey[topic(id.Project, id.Domain)] = st
	}
	if r.Created || isNew {
		st.Runs++
	}
	act := r.Run.StartedAt
	if r.Run.EndedAt != nil && r.Run.EndedAt.After(act) {
		act = *r.Run.EndedAt
	}
	if act.After(st.LastActivity) {
		st.LastActivity = act
	}
	if r.Created || isNew || st.LastActivity.Sub(st.published) >= activityStep {
		st.published = st.LastActivity
		s.publishProjectLocked(st.Project, false)
	}
}

// runDeletedLocked follows a deletion into its project, read again from
// history: deletions are rare, and a count kept by hand would drift.
func (s *Service) runDeletedLocked(ctx context.Context, id v1.RunID) {
	p := &s.projects
	p.mu.Lock()
	loaded := p.loaded
	p.mu.Unlock()
	if !loaded {
		return
	}
	pr, err := s.store.Project(ctx, id.Project, id.Domain)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		// Read from scratch at the next subscription or list.
		s.log.Warn().Err(err).Str("project", id.Project).Str("domain", id.Domain).Msg("project count after a deletion")
		p.loaded = false
		return
	}
	key := topic(id.Project, id.Domain)
	if pr.Runs > 0 {
		p.byKey[key] = &projectState{Project: pr, published: pr.LastActivity}
		s.publishProjectLocked(pr, false)
		return
	}
	if _, had := p.byKey[key]; had {
		delete(p.byKey, key)
		s.publishProjectLocked(pr, true)
	}
}

func (s *Service) publishProjectLocked(pr Project, deleted bool) {
	s.projects.seq++
	s.projects.journal.Publish(journal.Entry[*ProjectEvent]{
		Cursor: s.projects.seq, Key: topic(pr.Project, pr.Domain), Topics: []string{projectsTopic},
		Value: &ProjectEvent{Project: pr, Deleted: deleted},
	})
}
