package freight

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/pipeline"
)

// Sync brings the Freight of a Stage's project in line with the Stage's
// status, as Kargo's Stage controller does: the Freight of its current
// collection is currentlyIn the Stage (since now, if it was not), Freight
// that left it is not (its soak is kept as the longest completed one),
// and the Freight the Stage has verified is verifiedIn it.
func (m *Manager) Sync(ctx context.Context, s *kargoapi.Stage, now time.Time) error {
	current, verified := freightOf(s)
	all, err := m.freight.ByIndex(pipeline.IndexNamespace, s.Namespace)
	if err != nil {
		return err
	}
	for _, f := range all {
		next := synced(f, s.Name, current[f.Name], verified[f.Name], now)
		if next == nil {
			continue
		}
		out, err := m.client.KargoV1alpha1().Freights(s.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return writeError(s.Namespace, f.Name, err)
		}
		m.freight.Wrote(out)
	}
	return nil
}

// freightOf is the Freight in s's current collection, and the Freight s
// has verified, by name.
func freightOf(s *kargoapi.Stage) (current, verified map[string]bool) {
	current, verified = map[string]bool{}, map[string]bool{}
	if cur := s.Status.FreightHistory.Current(); cur != nil {
		for _, ref := range cur.References() {
			current[ref.Name] = true
		}
	}
	for _, name := range rules.VerifiedFreight(s) {
		verified[name] = true
	}
	return current, verified
}

// synced is f with its status in line with the Stage stage, given whether
// f is in its current collection and verified in it, at now; nil when f's
// status already is.
func synced(f *kargoapi.Freight, stage string, current, verified bool, now time.Time) *kargoapi.Freight {
	next := f.DeepCopy()
	switch _, in := f.Status.CurrentlyIn[stage]; {
	case current && !in:
		next.Status.AddCurrentStage(stage, now)
	case !current && in:
		next.Status.RemoveCurrentStage(stage)
	}
	if verified {
		next.Status.AddVerifiedStage(stage, now)
	}
	if equality.Semantic.DeepEqual(f.Status, next.Status) {
		return nil
	}
	return next
}
