package freight

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// Create stores Freight as a Warehouse would have discovered it: its
// name is the hash of its artifacts (Kargo's), its alias the given one or
// a generated one.
func (m *Manager) Create(ctx context.Context, project string, f *kargoapi.Freight) (*View, error) {
	if err := prepare(project, f); err != nil {
		return nil, err
	}
	if err := rules.DefaultFreight(f, true, m.newAlias(project)); err != nil {
		return nil, err
	}
	out, err := m.client.KargoV1alpha1().Freights(project).Create(ctx, f, metav1.CreateOptions{})
	if err != nil {
		return nil, writeError(project, f.Name, err)
	}
	m.freight.Wrote(out)
	return m.freight.View(out), nil
}

// newAlias makes an alias no Freight of the project has: Kargo picks an
// adjective-animal pair; a short counter-based name serves here.
func (m *Manager) newAlias(project string) func() (string, error) {
	return func() (string, error) {
		inProject, _ := m.freight.ByIndex(pipeline.IndexNamespace, project)
		return freeAlias(len(inProject), func(alias string) bool {
			fs, _ := m.freight.ByIndex(indexAlias, project+"/"+alias)
			return len(fs) > 0
		}), nil
	}
}

// Approve makes Freight available to a Stage whatever its verification
// or soak (Kargo's manual approval); approving again is a no-op.
func (m *Manager) Approve(ctx context.Context, project, nameOrAlias, stage string) (*View, error) {
	f, err := m.Named(ctx, project, nameOrAlias, "")
	if err != nil {
		return nil, err
	}
	if _, err := m.stage(ctx, project, stage); err != nil {
		return nil, err
	}
	if f.IsApprovedFor(stage) {
		return m.freight.View(f), nil
	}
	out, err := m.client.KargoV1alpha1().Freights(project).Patch(ctx, f.Name, types.MergePatchType,
		approvalPatch(stage, m.now()), metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, writeError(project, f.Name, err)
	}
	m.freight.Wrote(out)
	return m.freight.View(out), nil
}

// prepare checks and resets what a body may not set before Kargo's rules:
// the project is the path's, and the status and resource version are the
// server's. Then Kargo's Freight validation.
func prepare(project string, f *kargoapi.Freight) error {
	if f.Namespace != "" && f.Namespace != project {
		return pipeline.FieldErrors{{Path: []string{"metadata", "namespace"},
			Detail: fmt.Sprintf("Invalid value: %q: must be the project %q (or left out)", f.Namespace, project)}}
	}
	f.Namespace, f.ResourceVersion, f.Status = project, "", kargoapi.FreightStatus{}
	return pipeline.FromFieldErrors(rules.ValidateFreight(f))
}

// freeAlias is the first "freight-<i>" from i = n+1 (n: the Freight in the
// project) that taken says no Freight has.
func freeAlias(n int, taken func(alias string) bool) string {
	for i := n + 1; ; i++ {
		if alias := fmt.Sprintf("freight-%d", i); !taken(alias) {
			return alias
		}
	}
}

// approvalPatch approves Freight for stage at at: a merge patch of the
// status that adds one key, so it cannot conflict with the Stage
// controller's writes to the same status.
func approvalPatch(stage string, at time.Time) []byte {
	approved := kargoapi.ApprovedStage{ApprovedAt: &metav1.Time{Time: at}}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"approvedFor": map[string]any{stage: approved}}})
	return patch
}
