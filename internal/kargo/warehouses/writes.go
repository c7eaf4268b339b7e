package warehouses

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// Create stores a new Warehouse in a project, defaulted and validated as
// Kargo's webhooks would. The body's status is ignored (the controller's).
func (m *Manager) Create(ctx context.Context, project string, w *kargoapi.Warehouse) (*View, error) {
	if err := prepare(project, "", w); err != nil {
		return nil, err
	}
	if err := m.stages.CheckProjectForWrite(ctx, project); err != nil {
		return nil, err
	}
	w.ResourceVersion, w.Status = "", kargoapi.WarehouseStatus{}
	out, err := m.client.KargoV1alpha1().Warehouses(project).Create(ctx, w, metav1.CreateOptions{})
	if err != nil {
		return nil, writeError(project, w.Name, err)
	}
	m.warehouses.Wrote(out)
	return m.warehouses.View(out), nil
}

// Replace replaces a Warehouse's metadata and spec, from the resource
// version the body names: one changed since is ErrConflict.
func (m *Manager) Replace(ctx context.Context, project, name string, w *kargoapi.Warehouse) (*View, error) {
	if err := prepare(project, name, w); err != nil {
		return nil, err
	}
	if w.ResourceVersion == "" {
		return nil, pipeline.FieldErrors{{Path: []string{"metadata", "resourceVersion"},
			Detail: "Required value: the version this change was made from (read the Warehouse first)"}}
	}
	out, err := m.client.KargoV1alpha1().Warehouses(project).Update(ctx, w, metav1.UpdateOptions{})
	if err != nil {
		return nil, writeError(project, name, err)
	}
	m.warehouses.Wrote(out)
	return m.warehouses.View(out), nil
}

// Delete deletes a Warehouse; its Freight stays, as in Kargo. The next
// read shows the delete (it waits for the deletion's event:
// pipeline.Cache.Deleting).
func (m *Manager) Delete(ctx context.Context, project, name string) error {
	done := m.warehouses.DeletingName(project, name)
	err := m.client.KargoV1alpha1().Warehouses(project).Delete(ctx, name, metav1.DeleteOptions{})
	done(err == nil)
	if err != nil {
		return writeError(project, name, err)
	}
	return nil
}

// prepare checks what this server requires of a body before Kargo's rules
// (which it then applies, defaulting w): its apiVersion and kind, and the
// project and name the path gives (name empty on a create).
func prepare(project, name string, w *kargoapi.Warehouse) error {
	var errs pipeline.FieldErrors
	if gv := kargoapi.GroupVersion.String(); w.APIVersion != "" && w.APIVersion != gv {
		errs = append(errs, pipeline.FieldError{Path: []string{"apiVersion"},
			Detail: fmt.Sprintf("Unsupported value: %q: supported values: %q", w.APIVersion, gv)})
	}
	if w.Kind != "" && w.Kind != "Warehouse" {
		errs = append(errs, pipeline.FieldError{Path: []string{"kind"},
			Detail: fmt.Sprintf(`Unsupported value: %q: supported values: "Warehouse"`, w.Kind)})
	}
	if w.Namespace == "" {
		w.Namespace = project
	} else if w.Namespace != project {
		errs = append(errs, pipeline.FieldError{Path: []string{"metadata", "namespace"},
			Detail: fmt.Sprintf("Invalid value: %q: must be the project %q (or left out)", w.Namespace, project)})
	}
	switch {
	case name != "" && w.Name == "":
		w.Name = name
	case name != "" && w.Name != name:
		errs = append(errs, pipeline.FieldError{Path: []string{"metadata", "name"},
			Detail: fmt.Sprintf("Invalid value: %q: must be the Warehouse's name in the path, %q", w.Name, name)})
	case w.Name == "":
		errs = append(errs, pipeline.FieldError{Path: []string{"metadata", "name"}, Detail: "Required value"})
	}
	if len(errs) > 0 {
		return errs
	}
	rules.DefaultWarehouse(w)
	return pipeline.FromFieldErrors(rules.ValidateWarehouse(w))
}
