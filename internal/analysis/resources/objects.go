package resources

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/journal"
	"taskactions/internal/pipeline"
)

// View is an object as clients see it, at one resource version.
type View[T pipeline.Object] = pipeline.ObjectView[T]

// Objects serves one kind: reads from its cache, writes through the API
// server, each checked by Rollouts' rules first. A namespaced kind's
// objects are in their project's namespace; a cluster-scoped kind's have
// none, and its methods take the project "".
type Objects[T pipeline.Object] struct {
	kind     kind[T]
	cache    *pipeline.Cache[T, *View[T]]
	projects Projects
}

func newObjects[T pipeline.Object](k kind[T], cfg Config) *Objects[T] {
	return &Objects[T]{kind: k, cache: pipeline.New(k.pipeline, cfg.Log), projects: cfg.Projects}
}

// List returns the views of a project's objects (every object, for a
// cluster-scoped kind), sorted by name, from the cache.
func (o *Objects[T]) List(ctx context.Context, project string) ([]*View[T], error) {
	if err := o.checkProject(ctx, project, false); err != nil {
		return nil, err
	}
	return o.cache.InNamespace(ctx, project)
}

// Get returns the view of one object from the cache.
func (o *Objects[T]) Get(ctx context.Context, project, name string) (*View[T], error) {
	if err := o.checkProject(ctx, project, false); err != nil {
		return nil, err
	}
	v, ok, err := o.cache.Named(ctx, project, name)
	if err == nil && !ok {
		err = pipeline.Errorf(pipeline.ErrNotFound, "%s %q not found%s", o.kind.name, name, o.in(project))
	}
	return v, err
}

// Subscription delivers the updates of a kind's objects.
type Subscription[T pipeline.Object] = journal.Subscription[*View[T]]

// Start says how a subscription begins (resumed with a replay, or not).
type Start[T pipeline.Object] = journal.Start[*View[T]]

// Subscribe opens a subscription to a project's objects, with the
// snapshot/resume semantics of pipeline.Subscribe. The caller has
// checked the project (CheckProject), before the stream's headers.
func (o *Objects[T]) Subscribe(ctx context.Context, project string, after *uint64) (*Subscription[T], Start[T], []*View[T]) {
	return o.cache.SubscribeNamespace(ctx, project, "", after)
}

// CheckProject reports whether a project can be read.
func (o *Objects[T]) CheckProject(ctx context.Context, project string) error {
	return o.checkProject(ctx, project, false)
}

// Journal exposes cursor formatting for the kind's streams.
func (o *Objects[T]) Journal() *journal.Journal[*View[T]] { return o.cache.Journal() }

// Create stores a new object, checked by Rollouts' rules.
func (o *Objects[T]) Create(ctx context.Context, project string, obj T) (*View[T], error) {
	if err := o.prepare(project, "", obj); err != nil {
		return nil, err
	}
	if err := o.checkProject(ctx, project, true); err != nil {
		return nil, err
	}
	obj.SetResourceVersion("")
	if o.kind.created != nil {
		o.kind.created(obj)
	}
	out, err := o.kind.client(project).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		return nil, o.writeError(project, obj.GetName(), err)
	}
	o.cache.Wrote(out)
	return o.cache.View(out), nil
}

// Replace replaces an object from the resource version the body names:
// one changed since is ErrConflict.
func (o *Objects[T]) Replace(ctx context.Context, project, name string, obj T) (*View[T], error) {
	if err := o.prepare(project, name, obj); err != nil {
		return nil, err
	}
	if obj.GetResourceVersion() == "" {
		return nil, pipeline.FieldErrors{{Path: []string{"metadata", "resourceVersion"},
			Detail: fmt.Sprintf("Required value: the version this change was made from (read the %s first)", o.kind.name)}}
	}
	out, err := o.kind.client(project).Update(ctx, obj, metav1.UpdateOptions{})
	if err != nil {
		return nil, o.writeError(project, name, err)
	}
	o.cache.Wrote(out)
	return o.cache.View(out), nil
}

// Delete deletes an object. The next read shows the delete (it waits for
// the deletion's event: pipeline.Cache.Deleting).
func (o *Objects[T]) Delete(ctx context.Context, project, name string) error {
	done := o.cache.DeletingName(project, name)
	err := o.kind.client(project).Delete(ctx, name, metav1.DeleteOptions{})
	done(err == nil)
	if err != nil {
		return o.writeError(project, name, err)
	}
	return nil
}

func (o *Objects[T]) checkProject(ctx context.Context, project string, writing bool) error {
	switch {
	case o.kind.cluster:
		return nil
	case writing:
		return o.projects.CheckProjectForWrite(ctx, project)
	}
	return o.projects.CheckProject(ctx, project)
}

// prepare checks what this server requires of a body before Rollouts'
// rules (which it then applies): its apiVersion and kind, and the
// project and name the path gives (name empty on a create).
func (o *Objects[T]) prepare(project, name string, obj T) error {
	errs := o.typeErrors(obj)
	switch ns := obj.GetNamespace(); {
	case o.kind.cluster:
		obj.SetNamespace("") // as the API server does for a cluster-scoped kind
	case ns == "":
		obj.SetNamespace(project)
	case ns != project:
		errs = append(errs, pipeline.FieldError{Path: []string{"metadata", "namespace"},
			Detail: fmt.Sprintf("Invalid value: %q: must be the project %q (or left out)", ns, project)})
	}
	switch {
	case name != "" && obj.GetName() == "":
		obj.SetName(name)
	case name != "" && obj.GetName() != name:
		errs = append(errs, pipeline.FieldError{Path: []string{"metadata", "name"},
			Detail: fmt.Sprintf("Invalid value: %q: must be the %s's name in the path, %q", obj.GetName(), o.kind.name, name)})
	case obj.GetName() == "":
		errs = append(errs, pipeline.FieldError{Path: []string{"metadata", "name"}, Detail: "Required value"})
	}
	if len(errs) > 0 {
		return errs
	}
	return pipeline.FromFieldErrors(o.kind.validate(obj))
}

// typeErrors refuses an apiVersion or kind other than the kind's; both
// may be left out.
func (o *Objects[T]) typeErrors(obj T) pipeline.FieldErrors {
	var errs pipeline.FieldErrors
	t, err := meta.TypeAccessor(obj)
	if err != nil {
		return pipeline.FieldErrors{{Path: []string{"kind"}, Detail: err.Error()}}
	}
	if gv := rolloutsapi.GroupVersion.String(); t.GetAPIVersion() != "" && t.GetAPIVersion() != gv {
		errs = append(errs, pipeline.FieldError{Path: []string{"apiVersion"},
			Detail: fmt.Sprintf("Unsupported value: %q: supported values: %q", t.GetAPIVersion(), gv)})
	}
	if t.GetKind() != "" && t.GetKind() != o.kind.name {
		errs = append(errs, pipeline.FieldError{Path: []string{"kind"},
			Detail: fmt.Sprintf("Unsupported value: %q: supported values: %q", t.GetKind(), o.kind.name)})
	}
	return errs
}

// in names the project an object is in, for messages.
func (o *Objects[T]) in(project string) string {
	if o.kind.cluster {
		return ""
	}
	return fmt.Sprintf(" in project %q", project)
}

func (o *Objects[T]) writeError(project, name string, err error) error {
	if !o.kind.cluster {
		return pipeline.FromAPIError(o.kind.name, project, name, err)
	}
	switch {
	case apierrors.IsNotFound(err):
		return pipeline.Errorf(pipeline.ErrNotFound, "%s %q not found", o.kind.name, name)
	case apierrors.IsAlreadyExists(err):
		return pipeline.Errorf(pipeline.ErrConflict, "%s %q already exists", o.kind.name, name)
	}
	return pipeline.FromAPIError(o.kind.name, project, name, err)
}
