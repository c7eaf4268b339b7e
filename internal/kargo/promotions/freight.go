package promotions

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/journal"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// FreightView is a piece of Freight as clients see it.
type FreightView = pipeline.ObjectView[*kargoapi.Freight]

const indexAlias = "alias"

// freightKind: by project, newest first (Kargo's Freight timeline), with
// an index on the alias.
func freightKind(client rest, j journal.Config) pipeline.Kind[*kargoapi.Freight, *FreightView] {
	return pipeline.ByNamespace(pipeline.Kind[*kargoapi.Freight, *FreightView]{
		Name:      "Freight",
		ListWatch: cache.NewListWatchFromClient(client, "freights", metav1.NamespaceAll, fields.Everything()),
		Example:   &kargoapi.Freight{},
		Indexers: cache.Indexers{indexAlias: func(obj any) ([]string, error) {
			f := obj.(*kargoapi.Freight)
			return []string{f.Namespace + "/" + f.Alias}, nil
		}},
		Compare: func(a, b *kargoapi.Freight) int {
			return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
		},
		View:    pipeline.ObjectViews[kargoapi.Freight](kargoapi.GroupVersion.WithKind("Freight")),
		Same:    pipeline.SameObject[*kargoapi.Freight],
		Journal: j,
	})
}

// ListFreight returns a project's Freight, newest first; with
// availableTo, only what is available to that Stage.
func (m *Manager) ListFreight(ctx context.Context, project, availableTo string) ([]*FreightView, error) {
	all, err := m.freight.InNamespace(ctx, project)
	if err != nil || availableTo == "" {
		return all, err
	}
	st, err := m.stage(ctx, project, availableTo)
	if err != nil {
		return nil, err
	}
	var out []*FreightView
	for _, v := range all {
		if st.IsFreightAvailable(v.Object) {
			out = append(out, v)
		}
	}
	return out, nil
}

// GetFreight returns one piece of Freight, by name or, failing that, by
// alias (Kargo's API takes either).
func (m *Manager) GetFreight(ctx context.Context, project, nameOrAlias string) (*FreightView, error) {
	f, err := m.freightNamed(ctx, project, nameOrAlias, "")
	if err != nil {
		return nil, err
	}
	return m.freight.View(f), nil
}

// freightNamed finds Freight by name, or by alias when name is empty.
func (m *Manager) freightNamed(ctx context.Context, project, name, alias string) (*kargoapi.Freight, error) {
	m.freight.CatchUp(ctx)
	if name != "" {
		if f, err := m.freight.Get(project, name); err != nil || f != nil {
			return f, err
		}
		alias = name
	}
	fs, err := m.freight.ByIndex(indexAlias, project+"/"+alias)
	if err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		if name != "" {
			return nil, pipeline.Errorf(pipeline.ErrNotFound, "%s", rules.MsgFreightNotFound(name, project))
		}
		return nil, pipeline.Errorf(pipeline.ErrNotFound, "%s", rules.MsgFreightAliasNotFound(alias, project))
	}
	return fs[0], nil
}

// CreateFreight stores Freight as a Warehouse would have discovered it:
// its name is the hash of its artifacts (Kargo's), its alias the given
// one or a generated one.
func (m *Manager) CreateFreight(ctx context.Context, project string, f *kargoapi.Freight) (*FreightView, error) {
	if f.Namespace != "" && f.Namespace != project {
		return nil, pipeline.FieldErrors{{Path: []string{"metadata", "namespace"},
			Detail: fmt.Sprintf("Invalid value: %q: must be the project %q (or left out)", f.Namespace, project)}}
	}
	f.Namespace, f.ResourceVersion, f.Status = project, "", kargoapi.FreightStatus{}
	if err := pipeline.FromFieldErrors(rules.ValidateFreight(f)); err != nil {
		return nil, err
	}
	if err := rules.DefaultFreight(f, true, m.newAlias(project)); err != nil {
		return nil, err
	}
	out, err := m.client.KargoV1alpha1().Freights(project).Create(ctx, f, metav1.CreateOptions{})
	if err != nil {
		return nil, writeError("Freight", project, f.Name, err)
	}
	m.freight.Wrote(out)
	return m.freight.View(out), nil
}

// newAlias makes an alias no Freight of the project has: Kargo picks an
// adjective-animal pair; a short counter-based name serves here.
func (m *Manager) newAlias(project string) func() (string, error) {
	return func() (string, error) {
		inProject, _ := m.freight.ByIndex(pipeline.IndexNamespace, project)
		for i := len(inProject) + 1; ; i++ {
			alias := fmt.Sprintf("freight-%d", i)
			if fs, _ := m.freight.ByIndex(indexAlias, project+"/"+alias); len(fs) == 0 {
				return alias, nil
			}
		}
	}
}

// ApproveFreight makes Freight available to a Stage whatever its
// verification or soak (Kargo's manual approval); approving again is a
// no-op.
func (m *Manager) ApproveFreight(ctx context.Context, project, nameOrAlias, stage string) (*FreightView, error) {
	f, err := m.freightNamed(ctx, project, nameOrAlias, "")
	if err != nil {
		return nil, err
	}
	if _, err := m.stage(ctx, project, stage); err != nil {
		return nil, err
	}
	if f.IsApprovedFor(stage) {
		return m.freight.View(f), nil
	}
	// A merge patch of the status: it adds one key, so it cannot conflict
	// with the Stage controller's writes to the same status.
	approved := kargoapi.ApprovedStage{ApprovedAt: &metav1.Time{Time: m.now()}}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"approvedFor": map[string]any{stage: approved}}})
	out, err := m.client.KargoV1alpha1().Freights(project).Patch(ctx, f.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, writeError("Freight", project, f.Name, err)
	}
	m.freight.Wrote(out)
	return m.freight.View(out), nil
}

// SyncFreight brings the Freight of a Stage's project in line with the
// Stage's status, as Kargo's Stage controller does: the Freight of its
// current collection is currentlyIn the Stage (since now, if it was not),
// Freight that left it is not (its soak is kept as the longest completed
// one), and the Freight the Stage has verified is verifiedIn it.
func (m *Manager) SyncFreight(ctx context.Context, s *kargoapi.Stage, now time.Time) error {
	current := map[string]bool{}
	if cur := s.Status.FreightHistory.Current(); cur != nil {
		for _, ref := range cur.References() {
			current[ref.Name] = true
		}
	}
	verified := map[string]bool{}
	for _, name := range rules.VerifiedFreight(s) {
		verified[name] = true
	}
	all, err := m.freight.ByIndex(pipeline.IndexNamespace, s.Namespace)
	if err != nil {
		return err
	}
	for _, f := range all {
		next := f.DeepCopy()
		switch _, in := f.Status.CurrentlyIn[s.Name]; {
		case current[f.Name] && !in:
			next.Status.AddCurrentStage(s.Name, now)
		case !current[f.Name] && in:
			next.Status.RemoveCurrentStage(s.Name)
		}
		if verified[f.Name] {
			next.Status.AddVerifiedStage(s.Name, now)
		}
		if equality.Semantic.DeepEqual(f.Status, next.Status) {
			continue
		}
		out, err := m.client.KargoV1alpha1().Freights(s.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return writeError("Freight", s.Namespace, f.Name, err)
		}
		m.freight.Wrote(out)
	}
	return nil
}
