package freight

import (
	"context"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// List returns a project's Freight, newest first; with availableTo, only
// what is available to that Stage.
func (m *Manager) List(ctx context.Context, project, availableTo string) ([]*View, error) {
	all, err := m.freight.InNamespace(ctx, project)
	if err != nil || availableTo == "" {
		return all, err
	}
	st, err := m.stage(ctx, project, availableTo)
	if err != nil {
		return nil, err
	}
	return available(all, st), nil
}

// Get returns one piece of Freight, by name or, failing that, by alias
// (Kargo's API takes either).
func (m *Manager) Get(ctx context.Context, project, nameOrAlias string) (*View, error) {
	f, err := m.Named(ctx, project, nameOrAlias, "")
	if err != nil {
		return nil, err
	}
	return m.freight.View(f), nil
}

// ByName is a project's Freight of that name, by name only (no alias);
// nil, nil when there is none: what Kargo's expression functions and a
// verification's owner references read.
func (m *Manager) ByName(ctx context.Context, project, name string) (*kargoapi.Freight, error) {
	m.freight.CatchUp(ctx)
	return m.freight.Get(project, name)
}

// Named finds Freight by name (falling back to the alias when no Freight
// has that name), or by alias when name is empty, in the cache once this
// server's own writes have reached it.
func (m *Manager) Named(ctx context.Context, project, name, alias string) (*kargoapi.Freight, error) {
	m.freight.CatchUp(ctx)
	if name != "" {
		if f, err := m.freight.Get(project, name); err != nil || f != nil {
			return f, err
		}
		alias = name
	}
	fs, err := m.freight.ByIndex(indexAlias, project+"/"+alias)
	if err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		return nil, notFound(project, name, alias)
	}
	return fs[0], nil
}

// available is the Freight among all that is available to st.
func available(all []*View, st *kargoapi.Stage) []*View {
	var out []*View
	for _, v := range all {
		if st.IsFreightAvailable(v.Object) {
			out = append(out, v)
		}
	}
	return out
}

// notFound is Kargo's not-found error for Freight looked up by name (which
// was also tried as an alias), or by alias when name is empty.
func notFound(project, name, alias string) error {
	if name != "" {
		return pipeline.Errorf(pipeline.ErrNotFound, "%s", rules.MsgFreightNotFound(name, project))
	}
	return pipeline.Errorf(pipeline.ErrNotFound, "%s", rules.MsgFreightAliasNotFound(alias, project))
}
