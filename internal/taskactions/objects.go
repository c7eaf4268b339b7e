package taskactions

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	v1 "taskactions/api/v1"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/pipeline"
)

// objects reads and writes TaskAction objects on the API server, as the
// manager's rules decide. Every write is conditional (a version or a uid),
// and each is noted in the cache (Wrote), so that this server's reads that
// follow see it: read-your-writes.
type objects struct {
	client  versioned.Interface
	actions *pipeline.Cache[*v1.TaskAction, *ActionUpdate]
	cached  lookup
	ns      *namespaces
	history archive
}

// live reads an action from the API server, for decisions that must not
// act on a stale cache (a retried write after a conflict, a parent created
// a moment ago). Where the cache knows the object it is read by that name;
// else under the names this server gives new actions.
func (o objects) live(ctx context.Context, id ActionID) (*v1.TaskAction, error) {
	type place struct{ ns, name string }
	var places []place
	if ta, _ := o.cached.get(id); ta != nil {
		places = append(places, place{ta.Namespace, ta.Name})
	}
	ns := o.ns.of(id.Project, id.Domain)
	places = append(places, place{ns, objectName(id.Run, id.Name)}, place{ns, altName(id)})
	for _, p := range places {
		ta, err := o.client.FlyteV1().TaskActions(p.ns).Get(ctx, p.name, metav1.GetOptions{})
		switch {
		case err == nil && id.matches(&ta.Spec):
			return ta, nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get action %s: %w", id, err)
		}
	}
	return nil, fmt.Errorf("action %s: %w", id, ErrNotFound)
}

// current is the action to update: the cached copy on a first attempt,
// else the API server's. The cached copy is read once it holds this
// server's own writes of the action: a client that reports twice in a row
// would otherwise have its second write refused and retried, and one that
// reports right after creating the action would make a read.
func (o objects) current(ctx context.Context, id ActionID, fromCache bool) (*v1.TaskAction, error) {
	if fromCache {
		ta, err := o.cached.get(id)
		switch {
		case err != nil:
		case ta == nil: // perhaps created here a moment ago
			o.actions.CatchUp(ctx)
			ta, err = o.cached.get(id)
		case o.actions.CatchUpWith(ctx, ta):
			ta, err = o.cached.get(id)
		}
		if err == nil && ta != nil {
			return ta, nil
		}
	}
	return o.live(ctx, id)
}

// create stores want, under its natural name or, when another action
// holds that, under altName. An object of the same identity already under
// either name is returned with created false.
func (o objects) create(ctx context.Context, id ActionID, want *v1.TaskAction) (out *v1.TaskAction, created bool, err error) {
	tas := o.client.FlyteV1().TaskActions(want.Namespace)
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

// update applies mutate to a copy of the action and writes it with write,
// retrying on conflict with a fresh read: the first attempt starts from
// the cache; a conflict means the cache was behind, so retries read from
// the API server. mutate may return ErrNoChange (no write), or an error
// that ends the update.
func (o objects) update(ctx context.Context, id ActionID, mutate func(*v1.TaskAction) error, write func(*v1.TaskAction) (*v1.TaskAction, error)) (*v1.TaskAction, error) {
	var out *v1.TaskAction
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := o.current(ctx, id, first)
		first = false
		if err != nil {
			return err
		}
		ta := cur.DeepCopy()
		if err := mutate(ta); err != nil {
			if errors.Is(err, ErrNoChange) {
				out = cur
				return nil
			}
			return err
		}
		out, err = write(ta)
		return err
	})
	if err != nil {
		switch {
		case apierrors.IsNotFound(err), errors.Is(err, ErrNotFound):
			return nil, o.history.gone(ctx, id)
		case isTooLarge(err):
			return nil, fmt.Errorf("action %s is too large to record a change in (delete it): %w", id, ErrTooLarge)
		}
		return nil, err
	}
	o.actions.Wrote(out)
	return out, nil
}

// delete deletes an action's object, that incarnation only (its uid is a
// precondition); one gone already is no error.
func (o objects) delete(ctx context.Context, ta *v1.TaskAction) error {
	err := o.client.FlyteV1().TaskActions(ta.Namespace).Delete(ctx, ta.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &ta.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s/%s: %w", ta.Namespace, ta.Name, err)
	}
	return nil
}

// deleteUnfinished deletes the object of an unfinished action, conditional
// on the version read: if the action changed meanwhile it is read again,
// and left alone once it has finished. It returns the object deleted (its
// last version), nil when none was: finished, being deleted, or gone.
func (o objects) deleteUnfinished(ctx context.Context, ta *v1.TaskAction) (*v1.TaskAction, error) {
	id := IDOf(ta)
	var deleted *v1.TaskAction
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if ta.DeletionTimestamp != nil || v1.PhaseOfAction(ta).Terminal() {
			return nil
		}
		err := o.client.FlyteV1().TaskActions(ta.Namespace).Delete(ctx, ta.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &ta.UID, ResourceVersion: &ta.ResourceVersion},
		})
		if err == nil {
			deleted = ta
		}
		if apierrors.IsConflict(err) {
			if cur, rerr := o.live(ctx, id); rerr == nil && cur.UID == ta.UID {
				ta = cur
			} else if errors.Is(rerr, ErrNotFound) {
				return nil
			}
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return deleted, err
}
