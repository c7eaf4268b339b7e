package projectconfigs

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// Get returns a project's ProjectConfig from the cache.
func (m *Manager) Get(ctx context.Context, project string) (*View, error) {
	if err := m.stages.CheckProject(ctx, project); err != nil {
		return nil, err
	}
	v, ok, err := m.configs.Named(ctx, project, project)
	if err == nil && !ok {
		err = notFound(project)
	}
	return v, err
}

// Put writes a project's ProjectConfig, PUT's way: the body is the whole
// config, created, or replacing the one there is; a body that names a
// metadata.resourceVersion replaces only that version (a config changed
// since is ErrConflict). It reports whether it created.
// Kargo's validation applies; the body's status is ignored.
func (m *Manager) Put(ctx context.Context, project string, cfg *kargoapi.ProjectConfig) (*View, bool, error) {
	if err := prepare(project, cfg); err != nil {
		return nil, false, err
	}
	if err := m.stages.CheckProjectForWrite(ctx, project); err != nil {
		return nil, false, err
	}
	cfg.Status = kargoapi.ProjectConfigStatus{}
	if cfg.ResourceVersion == "" {
		// The API server updates a custom resource only from a version:
		// the cached one's, after this server's own last write.
		m.configs.CatchUp(ctx)
		cur, err := m.configs.Get(project, project)
		if err != nil {
			return nil, false, err
		}
		if cur == nil {
			return m.write(ctx, cfg, true)
		}
		cfg.ResourceVersion = cur.ResourceVersion
	}
	return m.write(ctx, cfg, false)
}

// write creates or updates cfg, and reports whether it created.
func (m *Manager) write(ctx context.Context, cfg *kargoapi.ProjectConfig, create bool) (*View, bool, error) {
	configs := m.client.KargoV1alpha1().ProjectConfigs(cfg.Namespace)
	var out *kargoapi.ProjectConfig
	var err error
	if create {
		out, err = configs.Create(ctx, cfg, metav1.CreateOptions{})
	} else {
		out, err = configs.Update(ctx, cfg, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, false, writeError(cfg.Namespace, err)
	}
	m.configs.Wrote(out)
	return m.configs.View(out), create, nil
}

// Delete deletes a project's ProjectConfig: its Stages are no longer
// auto-promoted. The next read shows the delete (it waits for the
// deletion's event: pipeline.Cache.Deleting).
func (m *Manager) Delete(ctx context.Context, project string) error {
	if err := m.stages.CheckProject(ctx, project); err != nil {
		return err
	}
	done := m.configs.DeletingName(project, project)
	err := m.client.KargoV1alpha1().ProjectConfigs(project).Delete(ctx, project, metav1.DeleteOptions{})
	done(err == nil)
	if err != nil {
		return writeError(project, err)
	}
	return nil
}

// prepare checks what this server requires of a body before Kargo's rules
// (which it then applies): its apiVersion and kind, and the project the
// path gives; an empty name is the project's. The path names the one
// config of the project, so Kargo's rule that the name is the project's,
// which its webhook checks on create, holds for a replace too.
func prepare(project string, cfg *kargoapi.ProjectConfig) error {
	var errs pipeline.FieldErrors
	if gv := kargoapi.GroupVersion.String(); cfg.APIVersion != "" && cfg.APIVersion != gv {
		errs = append(errs, pipeline.FieldError{Path: []string{"apiVersion"},
			Detail: fmt.Sprintf("Unsupported value: %q: supported values: %q", cfg.APIVersion, gv)})
	}
	if cfg.Kind != "" && cfg.Kind != "ProjectConfig" {
		errs = append(errs, pipeline.FieldError{Path: []string{"kind"},
			Detail: fmt.Sprintf(`Unsupported value: %q: supported values: "ProjectConfig"`, cfg.Kind)})
	}
	if cfg.Namespace != "" && cfg.Namespace != project {
		errs = append(errs, pipeline.FieldError{Path: []string{"metadata", "namespace"},
			Detail: fmt.Sprintf("Invalid value: %q: must be the project %q (or left out)", cfg.Namespace, project)})
	}
	if len(errs) > 0 {
		return errs
	}
	cfg.Namespace = project
	if cfg.Name == "" {
		cfg.Name = project
	}
	return pipeline.FromFieldErrors(rules.ValidateProjectConfig(cfg, true))
}

// notFound is Kargo's API's answer for a project without a ProjectConfig.
func notFound(project string) error {
	return pipeline.Errorf(pipeline.ErrNotFound, "ProjectConfig %q not found", project)
}

// writeError maps the API server's refusals; a config that is not there
// is Kargo's not-found.
func writeError(project string, err error) error {
	if apierrors.IsNotFound(err) {
		return notFound(project)
	}
	return pipeline.FromAPIError("ProjectConfig", project, project, err)
}
