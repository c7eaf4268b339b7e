package taskactions

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "taskactions/api/v1"
	"taskactions/internal/runs"
)

// GetTaskAction returns one action from the cache. The result is shared
// with the cache: do not modify it.
func (m *Manager) GetTaskAction(ctx context.Context, id ActionID) (*v1.TaskAction, error) {
	m.actions.CatchUp(ctx)
	ta, err := m.cached(id)
	if err != nil {
		return nil, err
	}
	if ta == nil {
		return nil, fmt.Errorf("action %s: %w", id, ErrNotFound)
	}
	return ta, nil
}

// matches reports whether a spec is the action's: the spec, not a
// computed name, decides identity and so access.
func (id ActionID) matches(s *v1.TaskActionSpec) bool {
	return s.Project == id.Project && s.Domain == id.Domain && s.RunName == id.Run && s.ActionName == id.Name
}

// live reads an action from the API server, for decisions that must not
// act on a stale cache (a retried write after a conflict, a parent created
// a moment ago). Where the cache knows the object it is read by that name;
// else under the names this server gives new actions.
func (m *Manager) live(ctx context.Context, id ActionID) (*v1.TaskAction, error) {
	type place struct{ ns, name string }
	var places []place
	if ta, _ := m.cached(id); ta != nil {
		places = append(places, place{ta.Namespace, ta.Name})
	}
	ns := m.Namespace(id.Project, id.Domain)
	places = append(places, place{ns, objectName(id.Run, id.Name)}, place{ns, altName(id)})
	for _, p := range places {
		ta, err := m.client.FlyteV1().TaskActions(p.ns).Get(ctx, p.name, metav1.GetOptions{})
		switch {
		case err == nil && id.matches(&ta.Spec):
			return ta, nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get action %s: %w", id, err)
		}
	}
	return nil, fmt.Errorf("action %s: %w", id, ErrNotFound)
}

// ListRunActions returns every action of a run, from the cache's run
// index, oldest first.
func (m *Manager) ListRunActions(ctx context.Context, run v1.RunID) ([]*v1.TaskAction, error) {
	m.actions.CatchUp(ctx)
	return m.byIndex(indexRun, runIndexKey(run.Project, run.Domain, run.Run))
}

// ListChildActions returns the direct children of an action, from the
// cache's parent index, oldest first.
func (m *Manager) ListChildActions(ctx context.Context, parent ActionID) ([]*v1.TaskAction, error) {
	m.actions.CatchUp(ctx)
	return m.byIndex(indexParent, idKey(parent.Project, parent.Domain, parent.Run, parent.Name))
}

// runActionViews is ListRunActions, but the actions' current views.
func (m *Manager) runActionViews(ctx context.Context, run v1.RunID) ([]*ActionUpdate, error) {
	m.actions.CatchUp(ctx)
	return m.actions.ListViews(indexRun, runIndexKey(run.Project, run.Domain, run.Run))
}

// childActionViews is ListChildActions, but the actions' current views.
func (m *Manager) childActionViews(ctx context.Context, parent ActionID) ([]*ActionUpdate, error) {
	m.actions.CatchUp(ctx)
	return m.actions.ListViews(indexParent, idKey(parent.Project, parent.Domain, parent.Run, parent.Name))
}

// Parent is the cached parent of an action: nil for a root, or when the
// cache has none.
func (m *Manager) Parent(ta *v1.TaskAction) *v1.TaskAction {
	parent := specParent(&ta.Spec)
	if parent == "" {
		return nil
	}
	s := &ta.Spec
	p, _ := m.cached(ActionID{s.Project, s.Domain, s.RunName, parent})
	return p
}

// Children are the cached direct children of an action, in no order
// (from the index, not the sorted lists, which may lag the event being
// handled).
func (m *Manager) Children(ta *v1.TaskAction) []*v1.TaskAction {
	s := &ta.Spec
	kids, _ := m.actions.ByIndex(indexParent, idKey(s.Project, s.Domain, s.RunName, s.ActionName))
	return kids
}

// Owned are the cached actions that name uid among their owners.
func (m *Manager) Owned(uid types.UID) []*v1.TaskAction {
	owned, _ := m.actions.ByIndex(indexOwner, string(uid))
	return owned
}

// ByCacheKey returns the actions of a project and domain that share a
// cache key, from the cache.
func (m *Manager) ByCacheKey(project, domain, key string) ([]*v1.TaskAction, error) {
	return m.byIndex(indexCacheKey, project+"/"+domain+"/"+key)
}

// AllTaskActions returns every cached action.
func (m *Manager) AllTaskActions() []*v1.TaskAction { return m.actions.All() }

// RunsActions is what the run service would record of every cached
// action (to fill a history store created empty beside them).
func (m *Manager) RunsActions() []runs.Action {
	all := m.actions.All()
	out := make([]runs.Action, len(all))
	for i, ta := range all {
		out[i] = runsAction(m.actions.View(ta))
	}
	return out
}

// Views returns the current update of each of tas (from the reads above),
// in the same order. The updates are shared: treat them as read-only.
func (m *Manager) Views(tas []*v1.TaskAction) []*ActionUpdate { return m.actions.Views(tas) }

func (m *Manager) byIndex(index, key string) ([]*v1.TaskAction, error) {
	return m.actions.List(index, key)
}

func (id ActionID) String() string {
	return id.Project + "/" + id.Domain + "/" + id.Run + "/" + id.Name
}
