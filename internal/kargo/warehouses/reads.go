package warehouses

import (
	"context"

	"taskactions/internal/journal"
	"taskactions/internal/pipeline"
)

// List returns the views of a project's Warehouses, sorted by name, from
// the cache (after this server's own writes have reached it).
func (m *Manager) List(ctx context.Context, project string) ([]*View, error) {
	if err := m.stages.CheckProject(ctx, project); err != nil {
		return nil, err
	}
	return m.warehouses.InNamespace(ctx, project)
}

// Get returns the view of one Warehouse from the cache.
func (m *Manager) Get(ctx context.Context, project, name string) (*View, error) {
	if err := m.stages.CheckProject(ctx, project); err != nil {
		return nil, err
	}
	v, ok, err := m.warehouses.Named(ctx, project, name)
	if err == nil && !ok {
		err = notFound(project, name)
	}
	return v, err
}

// Subscription delivers the Warehouse updates of a project or of one.
type Subscription = journal.Subscription[*View]

// Start says how a subscription begins (resumed with a replay, or not).
type Start = journal.Start[*View]

// Subscribe opens a subscription to a project's Warehouses (name empty)
// or to one, with the snapshot/resume semantics of pipeline.Subscribe.
func (m *Manager) Subscribe(ctx context.Context, project, name string, after *uint64) (*Subscription, Start, []*View) {
	return m.warehouses.SubscribeNamespace(ctx, project, name, after)
}

// CheckProject reports whether a project can be read.
func (m *Manager) CheckProject(ctx context.Context, project string) error {
	return m.stages.CheckProject(ctx, project)
}

func notFound(project, name string) error {
	return pipeline.Errorf(pipeline.ErrNotFound, "Warehouse %q not found in project %q", name, project)
}
