package promotions

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// FreightRef names Freight by name or by alias: exactly one of the two.
type FreightRef struct{ Name, Alias string }

func (r FreightRef) check() error {
	if (r.Name == "") == (r.Alias == "") {
		return pipeline.Errorf(pipeline.ErrInvalid, "exactly one of freight or freightAlias should not be empty")
	}
	return nil
}

// Promote creates a Promotion of Freight to a Stage, built as Kargo's
// builder builds it, once the Freight is available to the Stage. actor
// is who asked (the create-actor annotation).
func (m *Manager) Promote(ctx context.Context, project, stage string, ref FreightRef, actor string) (*View, error) {
	if err := ref.check(); err != nil {
		return nil, err
	}
	st, err := m.stage(ctx, project, stage)
	if err != nil {
		return nil, err
	}
	f, err := m.freight.Named(ctx, project, ref.Name, ref.Alias)
	if err != nil {
		return nil, err
	}
	if !st.IsFreightAvailable(f) {
		return nil, pipeline.Errorf(pipeline.ErrInvalid, "%s", rules.MsgFreightNotAvailable(f.Name, stage))
	}
	return m.create(ctx, st, f.Name, actor)
}

// PromoteDownstream promotes Freight to every Stage that takes it from
// stage, all or nothing: each must have the Freight available before any
// is created, as Kargo checks. Control-flow Stages (no steps) are skipped.
func (m *Manager) PromoteDownstream(ctx context.Context, project, stage string, ref FreightRef, actor string) ([]*View, error) {
	if err := ref.check(); err != nil {
		return nil, err
	}
	if _, err := m.stage(ctx, project, stage); err != nil {
		return nil, err
	}
	f, err := m.freight.Named(ctx, project, ref.Name, ref.Alias)
	if err != nil {
		return nil, err
	}
	all, err := m.stages.List(ctx, project)
	if err != nil {
		return nil, err
	}
	var downstream []*kargoapi.Stage
	for _, u := range all {
		if takesFrom(u.Object, f.Origin, stage) {
			downstream = append(downstream, u.Object)
		}
	}
	if len(downstream) == 0 {
		return nil, pipeline.Errorf(pipeline.ErrNotFound, "%s", rules.MsgNoDownstreamStages(stage))
	}
	for _, d := range downstream {
		if !d.IsFreightAvailable(f) {
			return nil, pipeline.Errorf(pipeline.ErrInvalid, "%s", rules.MsgFreightNotAvailableDownstream(f.Name, d.Name))
		}
	}
	var out []*View
	var errs []error
	for _, d := range downstream {
		if d.IsControlFlow() {
			continue
		}
		v, err := m.create(ctx, d, f.Name, actor)
		if err != nil {
			errs = append(errs, fmt.Errorf("Stage %q: %w", d.Name, err))
			continue
		}
		out = append(out, v)
	}
	return out, errors.Join(errs...)
}

// takesFrom: s requests Freight of origin from upstream.
func takesFrom(s *kargoapi.Stage, origin kargoapi.FreightOrigin, upstream string) bool {
	for _, r := range s.Spec.RequestedFreight {
		if r.Origin.Equals(&origin) {
			for _, u := range r.Sources.Stages {
				if u == upstream {
					return true
				}
			}
		}
	}
	return false
}

func (m *Manager) stage(ctx context.Context, project, name string) (*kargoapi.Stage, error) {
	u, err := m.stages.Get(ctx, project, name)
	if err != nil {
		return nil, err
	}
	return u.Object, nil
}

// create builds and stores a Promotion.
func (m *Manager) create(ctx context.Context, st *kargoapi.Stage, freight, actor string) (*View, error) {
	p, err := rules.BuildPromotion(st, freight, actor, m.now(), rand.Reader)
	switch {
	case errors.Is(err, rules.ErrPromotionTaskUnsupported):
		return nil, pipeline.Errorf(pipeline.ErrUnsupported, "%w", err)
	case err != nil:
		return nil, pipeline.Errorf(pipeline.ErrInvalid, "%w", err)
	}
	out, err := m.client.KargoV1alpha1().Promotions(st.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return nil, writeError("Promotion", st.Namespace, p.Name, err)
	}
	m.promotions.Wrote(out)
	return m.promotions.View(out), nil
}

// Abort asks for a Promotion to be aborted, as Kargo does: the annotation
// kargo.akuity.io/abort. The orchestrator aborts its run; the running step
// ends Aborted, and so does the Promotion. A finished one is left as it is.
func (m *Manager) Abort(ctx context.Context, project, name, actor string) (*View, error) {
	v, err := m.Get(ctx, project, name)
	if err != nil {
		return nil, err
	}
	if v.Object.Status.Phase.IsTerminal() {
		return v, nil
	}
	req := kargoapi.AbortPromotionRequest{Action: kargoapi.AbortActionTerminate, Actor: actor}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{kargoapi.AnnotationKeyAbort: req.String()}}})
	out, err := m.client.KargoV1alpha1().Promotions(project).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, writeError("Promotion", project, name, err)
	}
	m.promotions.Wrote(out)
	return m.promotions.View(out), nil
}
