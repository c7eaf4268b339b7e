package stages

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// Create stores a new Stage in a project, defaulted and validated as
// Kargo's webhooks would. The body's status is ignored (it is the
// controller's).
func (m *Manager) Create(ctx context.Context, project string, s *kargoapi.Stage) (*Update, error) {
	if err := prepare(project, "", s); err != nil {
		return nil, err
	}
	if err := m.projects.check(ctx, project, true); err != nil {
		return nil, err
	}
	s.ResourceVersion, s.Status = "", kargoapi.StageStatus{}
	out, err := m.client.KargoV1alpha1().Stages(project).Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		return nil, writeError(project, s.Name, err)
	}
	m.stages.Wrote(out)
	return m.stages.View(out), nil
}

// Replace replaces a Stage's metadata and spec, from the resource version
// the body names: a Stage changed since is ErrConflict, never overwritten.
func (m *Manager) Replace(ctx context.Context, project, name string, s *kargoapi.Stage) (*Update, error) {
	if err := prepare(project, name, s); err != nil {
		return nil, err
	}
	if s.ResourceVersion == "" {
		return nil, pipeline.FieldErrors{{Path: []string{"metadata", "resourceVersion"},
			Detail: "Required value: the version this change was made from (read the Stage first)"}}
	}
	out, err := m.client.KargoV1alpha1().Stages(project).Update(ctx, s, metav1.UpdateOptions{})
	if err != nil {
		return nil, writeError(project, name, err)
	}
	m.stages.Wrote(out)
	return m.stages.View(out), nil
}

// Delete deletes a Stage. Like the other writes, the next read shows it
// (it waits for the deletion's event: pipeline.Cache.Deleting).
func (m *Manager) Delete(ctx context.Context, project, name string) error {
	done := m.stages.DeletingName(project, name)
	err := m.client.KargoV1alpha1().Stages(project).Delete(ctx, name, metav1.DeleteOptions{})
	done(err == nil)
	if err != nil {
		return writeError(project, name, err)
	}
	return nil
}

// RefreshTimeout bounds Refresh's wait for the controller.
const RefreshTimeout = 30 * time.Second

// ErrRefreshNotHandled: no controller handled a refresh in time.
var ErrRefreshNotHandled = errors.New("the refresh was not handled in time")

// Refresh asks the Stage controller to reconcile a Stage now, as Kargo
// does: a merge patch of the refresh annotation to the current time. With
// wait, it returns once status.lastHandledRefresh shows that value.
func (m *Manager) Refresh(ctx context.Context, project, name string, wait bool) (*Update, error) {
	token := time.Now().UTC().Format(time.RFC3339Nano)
	u, err := m.annotate(ctx, project, name, kargoapi.AnnotationKeyRefresh, token)
	if err != nil || !wait {
		return u, err
	}
	return m.waitRefreshed(ctx, project, name, token)
}

// waitRefreshed follows the Stage's stream until its status shows the
// refresh token.
func (m *Manager) waitRefreshed(ctx context.Context, project, name, token string) (*Update, error) {
	ctx, cancel := context.WithTimeout(ctx, RefreshTimeout)
	defer cancel()
	sub, _, snap := m.Subscribe(ctx, project, name, nil)
	defer sub.Close()
	handled := func(u *Update) bool { return refreshed(u, token) }
	for _, u := range snap {
		if handled(u) {
			return u, nil
		}
	}
	var buf []journalEntry
	for {
		select {
		case <-sub.Ready():
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("Stage %q: %w within %s (is a Stage controller running?)", name, ErrRefreshNotHandled, RefreshTimeout)
			}
			return nil, ctx.Err()
		}
		var lagged bool
		buf, lagged = sub.Drain(buf[:0])
		for _, e := range buf {
			if e.Value.Deleted {
				return nil, notFound(project, name)
			}
			if handled(e.Value) {
				return e.Value, nil
			}
		}
		if lagged { // cannot happen with one key; read the cache to be sure
			if u, err := m.Get(ctx, project, name); err == nil && handled(u) {
				return u, nil
			}
		}
	}
}

// refreshed: the Stage's controller has handled the refresh token.
func refreshed(u *Update, token string) bool {
	return !u.Deleted && u.Object.Status.LastHandledRefresh == token
}

// prepare checks what this server requires of a body before Kargo's rules
// (which it then applies, defaulting s): its apiVersion and kind, and the
// project and name the path gives (name empty on a create).
func prepare(project, name string, s *kargoapi.Stage) error {
	var errs pipeline.FieldErrors
	if gv := kargoapi.GroupVersion.String(); s.APIVersion != "" && s.APIVersion != gv {
		errs = append(errs, pipeline.FieldError{Path: []string{"apiVersion"},
			Detail: fmt.Sprintf("Unsupported value: %q: supported values: %q", s.APIVersion, gv)})
	}
	if s.Kind != "" && s.Kind != "Stage" {
		errs = append(errs, pipeline.FieldError{Path: []string{"kind"},
			Detail: fmt.Sprintf(`Unsupported value: %q: supported values: "Stage"`, s.Kind)})
	}
	switch {
	case s.Namespace == "":
		s.Namespace = project
	case s.Namespace != project:
		errs = append(errs, pipeline.FieldError{Path: []string{"metadata", "namespace"},
			Detail: fmt.Sprintf("Invalid value: %q: must be the project %q (or left out)", s.Namespace, project)})
	}
	switch {
	case name != "" && s.Name == "":
		s.Name = name
	case name != "" && s.Name != name:
		errs = append(errs, pipeline.FieldError{Path: []string{"metadata", "name"},
			Detail: fmt.Sprintf("Invalid value: %q: must be the Stage's name in the path, %q", s.Name, name)})
	case s.Name == "":
		errs = append(errs, pipeline.FieldError{Path: []string{"metadata", "name"}, Detail: "Required value"})
	}
	if len(errs) > 0 {
		return errs
	}
	rules.DefaultStage(s)
	return pipeline.FromFieldErrors(rules.ValidateStage(s))
}

func writeError(project, name string, err error) error {
	return pipeline.FromAPIError("Stage", project, name, err)
}
