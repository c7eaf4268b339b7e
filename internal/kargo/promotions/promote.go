package promotions

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
	"taskactions/internal/tracing"
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
	inProject := make([]*kargoapi.Stage, len(all))
	for i, u := range all {
		inProject[i] = u.Object
	}
	downstream, err := downstreamOf(inProject, f, stage)
	if err != nil {
		return nil, err
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

// AutoPromote creates a Promotion of freight to st as Kargo's Stage
// controller does when it auto-promotes: built as any, with no
// create-actor (Kargo's webhook names no actor for its own controller).
// The Stage controller decided that the Freight is available.
func (m *Manager) AutoPromote(ctx context.Context, st *kargoapi.Stage, freight string) (*kargoapi.Promotion, error) {
	v, err := m.create(ctx, st, freight, "")
	if err != nil {
		return nil, err
	}
	return v.Object, nil
}

// downstreamOf returns the Stages among inProject that take f from stage,
// once each has f available (all or nothing, as Kargo checks): none is
// ErrNotFound, one without f available ErrInvalid, in Kargo's words.
func downstreamOf(inProject []*kargoapi.Stage, f *kargoapi.Freight, stage string) ([]*kargoapi.Stage, error) {
	var downstream []*kargoapi.Stage
	for _, s := range inProject {
		if takesFrom(s, f.Origin, stage) {
			downstream = append(downstream, s)
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
	return downstream, nil
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
	p, err := build(st, freight, actor, m.now(), rand.Reader)
	if err != nil {
		return nil, err
	}
	// The request's trace context (tracing on), for the orchestrator to
	// start the Promotion's run in: a Promotion's trace is rooted at the
	// request that made it. In the create, never a write of its own.
	p.Annotations = tracing.Annotate(ctx, p.Annotations)
	out, err := m.client.KargoV1alpha1().Promotions(st.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return nil, writeError("Promotion", st.Namespace, p.Name, err)
	}
	m.promotions.Wrote(out)
	return m.promotions.View(out), nil
}

// build is rules.BuildPromotion with its errors as this server's: a step
// that needs a PromotionTask is ErrUnsupported, any other refusal
// ErrInvalid.
func build(st *kargoapi.Stage, freight, actor string, now time.Time, entropy io.Reader) (*kargoapi.Promotion, error) {
	p, err := rules.BuildPromotion(st, freight, actor, now, entropy)
	switch {
	case errors.Is(err, rules.ErrPromotionTaskUnsupported):
		return nil, pipeline.Errorf(pipeline.ErrUnsupported, "%w", err)
	case err != nil:
		return nil, pipeline.Errorf(pipeline.ErrInvalid, "%w", err)
	}
	return p, nil
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
	out, err := m.client.KargoV1alpha1().Promotions(project).Patch(ctx, name, types.MergePatchType, abortPatch(actor), metav1.PatchOptions{})
	if err != nil {
		return nil, writeError("Promotion", project, name, err)
	}
	m.promotions.Wrote(out)
	return m.promotions.View(out), nil
}

// abortPatch is the merge patch of Kargo's abort annotation: a request to
// terminate, by actor.
func abortPatch(actor string) []byte {
	req := kargoapi.AbortPromotionRequest{Action: kargoapi.AbortActionTerminate, Actor: actor}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{kargoapi.AnnotationKeyAbort: req.String()}}})
	return patch
}
