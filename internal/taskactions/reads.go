package taskactions

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	v1 "taskactions/api/v1"
)

// GetTaskAction returns one action from the cache. The result is shared
// with the cache: do not modify it.
func (m *Manager) GetTaskAction(ctx context.Context, id ActionID) (*v1.TaskAction, error) {
	m.actions.CatchUp(ctx)
	ta, err := m.cached.get(id)
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

// ListRunActions returns every action of a run, from the cache's run
// index, oldest first.
func (m *Manager) ListRunActions(ctx context.Context, run v1.RunID) ([]*v1.TaskAction, error) {
	m.actions.CatchUp(ctx)
	return m.cached.run(run)
}

// Parent is the cached parent of an action: nil for a root, or when the
// cache has none.
func (m *Manager) Parent(ta *v1.TaskAction) *v1.TaskAction {
	parent := specParent(&ta.Spec)
	if parent == "" {
		return nil
	}
	s := &ta.Spec
	p, _ := m.cached.get(ActionID{s.Project, s.Domain, s.RunName, parent})
	return p
}

// Children are the cached direct children of an action, in no order
// (from the index, not the sorted lists, which may lag the event being
// handled).
func (m *Manager) Children(ta *v1.TaskAction) []*v1.TaskAction { return m.cached.childrenNow(IDOf(ta)) }

// Owned are the cached actions that name uid among their owners.
func (m *Manager) Owned(uid types.UID) []*v1.TaskAction {
	owned, _ := m.actions.ByIndex(indexOwner, string(uid))
	return owned
}

// ByCacheKey returns the actions of a project and domain that share a
// cache key, from the cache.
func (m *Manager) ByCacheKey(project, domain, key string) ([]*v1.TaskAction, error) {
	return m.actions.List(indexCacheKey, project+"/"+domain+"/"+key)
}

func (id ActionID) String() string {
	return id.Project + "/" + id.Domain + "/" + id.Run + "/" + id.Name
}
