package taskactions

import (
	"fmt"
	"slices"
	"strings"

	v1 "taskactions/api/v1"
	"taskactions/internal/pipeline"
)

// lookup finds actions in the informer cache, by the indexes of
// informer.go. Nothing here waits for this server's writes (CatchUp) or
// reads the API server: the callers decide how fresh they need it.
type lookup struct {
	c *pipeline.Cache[*v1.TaskAction, *ActionUpdate]
}

// get returns the cached object of an action; nil, nil when there is
// none. Should two objects claim one identity (written by others), the
// oldest is the action.
func (l lookup) get(id ActionID) (*v1.TaskAction, error) {
	inf := l.c.Informer()
	if inf == nil {
		return nil, fmt.Errorf("manager is not watching")
	}
	objs, err := inf.GetIndexer().ByIndex(indexID, idKey(id.Project, id.Domain, id.Run, id.Name))
	if err != nil || len(objs) == 0 {
		return nil, err
	}
	tas := make([]*v1.TaskAction, len(objs))
	for i, o := range objs {
		tas[i] = o.(*v1.TaskAction)
	}
	slices.SortFunc(tas, func(a, b *v1.TaskAction) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return tas[0], nil
}

// run is a run's actions, oldest first (a sorted list the events keep).
func (l lookup) run(r v1.RunID) ([]*v1.TaskAction, error) {
	return l.c.List(indexRun, runIndexKey(r.Project, r.Domain, r.Run))
}

// runViews is run, but the actions' current views.
func (l lookup) runViews(r v1.RunID) ([]*ActionUpdate, error) {
	return l.c.ListViews(indexRun, runIndexKey(r.Project, r.Domain, r.Run))
}

// children are an action's direct children, oldest first.
func (l lookup) children(parent ActionID) ([]*v1.TaskAction, error) {
	return l.c.List(indexParent, idKey(parent.Project, parent.Domain, parent.Run, parent.Name))
}

// childViews is children, but the actions' current views.
func (l lookup) childViews(parent ActionID) ([]*ActionUpdate, error) {
	return l.c.ListViews(indexParent, idKey(parent.Project, parent.Domain, parent.Run, parent.Name))
}

// childrenNow are the direct children in no order, from the index, not
// the sorted lists, which may lag the event being handled (and which a
// walk down a tree would build one per descendant).
func (l lookup) childrenNow(parent ActionID) []*v1.TaskAction {
	kids, _ := l.c.ByIndex(indexParent, idKey(parent.Project, parent.Domain, parent.Run, parent.Name))
	return kids
}

// descendants are the action's children, theirs, and so on.
func (l lookup) descendants(id ActionID) []*v1.TaskAction {
	var out []*v1.TaskAction
	queue := []ActionID{id}
	for len(queue) > 0 && len(out) < maxDescendants {
		p := queue[0]
		queue = queue[1:]
		for _, k := range l.childrenNow(p) {
			out = append(out, k)
			queue = append(queue, IDOf(k))
		}
	}
	return out
}

// maxDescendants bounds a walk down a tree that hand-edited specs may
// have made cyclic.
const maxDescendants = 1 << 20

// scope is what a subscription's snapshot holds: a run's actions, or an
// action and its direct children.
func (l lookup) scope(s Scope) []*v1.TaskAction {
	r := s.Run
	if s.Action == "" {
		tas, _ := l.run(r)
		return tas
	}
	self := ActionID{r.Project, r.Domain, r.Run, s.Action}
	children, _ := l.children(self)
	if ta, _ := l.get(self); ta != nil {
		return append([]*v1.TaskAction{ta}, children...)
	}
	return children
}
