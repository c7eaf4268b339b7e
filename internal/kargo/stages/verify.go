package stages

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/pipeline"
)

// Reverify asks the Stage controller to verify the Stage's current
// Freight again, as Kargo's API does (ReverifyStageFreight): the
// reverify annotation names the current verification and who asks.
// A Stage without current Freight, or whose Freight was never verified,
// is ErrConflict.
func (m *Manager) Reverify(ctx context.Context, project, name, actor string) (*Update, error) {
	cur, err := m.currentVerification(ctx, project, name)
	if err != nil {
		return nil, err
	}
	req := kargoapi.VerificationRequest{ID: cur.ID, Actor: actor}
	return m.annotate(ctx, project, name, kargoapi.AnnotationKeyReverify, req.String())
}

// AbortVerification asks the Stage controller to abort the Stage's
// current verification, as Kargo's API does
// (AbortStageFreightVerification). One that has ended is left as it is:
// the Stage is returned unchanged.
func (m *Manager) AbortVerification(ctx context.Context, project, name, actor string) (*Update, error) {
	cur, err := m.currentVerification(ctx, project, name)
	if err != nil {
		return nil, err
	}
	if cur.Phase.IsTerminal() {
		return m.Get(ctx, project, name)
	}
	req := kargoapi.VerificationRequest{ID: cur.ID, Actor: actor}
	return m.annotate(ctx, project, name, kargoapi.AnnotationKeyAbort, req.String())
}

// currentVerification is the Stage's current Freight's last verification,
// with Kargo's messages when there is none.
func (m *Manager) currentVerification(ctx context.Context, project, name string) (*kargoapi.VerificationInfo, error) {
	u, err := m.Get(ctx, project, name)
	if err != nil {
		return nil, err
	}
	fc := u.Object.Status.FreightHistory.Current()
	if fc == nil || len(fc.Freight) == 0 {
		return nil, pipeline.Errorf(pipeline.ErrConflict, "stage has no current freight")
	}
	cur := fc.VerificationHistory.Current()
	switch {
	case cur == nil:
		return nil, pipeline.Errorf(pipeline.ErrConflict, "stage has no current verification info")
	case cur.ID == "":
		return nil, pipeline.Errorf(pipeline.ErrConflict, "current stage verification info has no ID")
	}
	return cur, nil
}

// annotate sets one annotation on a Stage (a refresh, a reverify, an
// abort), with a merge patch.
func (m *Manager) annotate(ctx context.Context, project, name, key, value string) (*Update, error) {
	out, err := m.client.KargoV1alpha1().Stages(project).Patch(ctx, name, types.MergePatchType, annotationPatch(key, value), metav1.PatchOptions{})
	if err != nil {
		return nil, writeError(project, name, err)
	}
	m.stages.Wrote(out)
	return m.stages.View(out), nil
}

// annotationPatch is the merge patch of one annotation to value.
func annotationPatch(key, value string) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}}) // strings always encode
	return b
}
