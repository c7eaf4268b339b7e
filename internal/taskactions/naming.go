package taskactions

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
)

// An action is its spec's (project, domain, run, action), never the name
// of its object. Objects are looked up through an index on that identity;
// Flyte keeps all in one namespace, and names joined with "-" collide
// ("col"+"x-y" and "col-x"+"y" are both col-x-y). A new action gets the
// name Flyte's Actions service gives it (actions/k8s buildTaskActionName,
// which its GetTaskAction, PutStatus and AbortAction look up) when it is
// free, and <run>-<action>-<hash of its identity> when another action
// holds it: the same name again on a retry, so creation stays idempotent.

// IDOf is the identity of an action: its spec's, never its object's name.
func IDOf(ta *v1.TaskAction) ActionID {
	s := &ta.Spec
	return ActionID{Project: s.Project, Domain: s.Domain, Run: s.RunName, Name: s.ActionName}
}

// objectName is the natural object name of an action, Flyte's rule:
// <run>-<action>, but <run>-a0 for an action named as its run (Flyte's
// root, whose run service names it a0 or the run's name: either way
// <run>-a0).
// Objects that earlier versions of this server named <run>-<run> are
// found as ever, by identity (the cache has every object).
func objectName(run, action string) string {
	if action == run {
		return run + "-a0"
	}
	return run + "-" + action
}

// altName is the name of an action whose natural name is taken.
func altName(id ActionID) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id.String()))
	return fmt.Sprintf("%s-%s-%08x", id.Run, id.Name, h.Sum64()&0xffffffff)
}

// cached returns the cached object of an action; nil, nil when there is
// none. Should two objects claim one identity (written by others), the
// oldest is the action.
func (m *Manager) cached(id ActionID) (*v1.TaskAction, error) {
	inf := m.Informer()
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

// create stores want, under its natural name or, when another action
// holds that, under altName. An object of the same identity already under
// either name is returned with created false.
func (m *Manager) create(ctx context.Context, id ActionID, want *v1.TaskAction) (out *v1.TaskAction, created bool, err error) {
	tas := m.client.FlyteV1().TaskActions(want.Namespace)
	for _, name := range []string{want.Name, altName(id)} {
		w := want.DeepCopy()
		w.Name = name
		out, err := tas.Create(ctx, w, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return out, err == nil, err
		}
		have, err := tas.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, false, fmt.Errorf("read %s/%s: %w", want.Namespace, name, err)
		}
		if id.matches(&have.Spec) {
			return have, false, nil
		}
	}
	return nil, false, fmt.Errorf("action %s: both %s and %s are held by other actions: %w", id, want.Name, altName(id), ErrConflict)
}
