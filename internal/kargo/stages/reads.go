package stages

import (
	"context"

	"taskactions/internal/journal"
	"taskactions/internal/pipeline"
)

// List returns the views of a project's Stages, sorted by name, from the
// cache (after this server's own writes have reached it).
func (m *Manager) List(ctx context.Context, project string) ([]*Update, error) {
	if err := m.projects.check(ctx, project, false); err != nil {
		return nil, err
	}
	return m.stages.InNamespace(ctx, project)
}

// Get returns the view of one Stage from the cache.
func (m *Manager) Get(ctx context.Context, project, name string) (*Update, error) {
	if err := m.projects.check(ctx, project, false); err != nil {
		return nil, err
	}
	u, ok, err := m.stages.Named(ctx, project, name)
	if err == nil && !ok {
		err = notFound(project, name)
	}
	return u, err
}

// Subscription delivers the Stage updates of a project or of one Stage.
type Subscription = journal.Subscription[*Update]

// Start says how a subscription begins (resumed with a replay, or not).
type Start = journal.Start[*Update]

// Subscribe opens a subscription to a project's Stages (name empty) or to
// one Stage, with the snapshot/resume semantics of pipeline.Subscribe.
// CheckProject first: a stream checks its project once, not at every
// reconnect.
func (m *Manager) Subscribe(ctx context.Context, project, name string, after *uint64) (*Subscription, Start, []*Update) {
	return m.stages.SubscribeNamespace(ctx, project, name, after)
}

func notFound(project, name string) error {
	return pipeline.Errorf(pipeline.ErrNotFound, "Stage %q not found in project %q", name, project)
}

// CheckProject reports whether a project can be read (see projects).
func (m *Manager) CheckProject(ctx context.Context, project string) error {
	return m.projects.check(ctx, project, false)
}

// CheckProjectForWrite is CheckProject before a write of any Kargo kind:
// on a cluster without Kargo, the project's namespace is created.
func (m *Manager) CheckProjectForWrite(ctx context.Context, project string) error {
	return m.projects.check(ctx, project, true)
}
