package orchestrator

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/kargo/promotions"
)

// cachedPromotions is a Promotion cache holding ps, for OfRun alone.
type cachedPromotions struct {
	Promotions
	ps []*kargoapi.Promotion
}

func (c cachedPromotions) OfRun(project, run string) *kargoapi.Promotion {
	for _, p := range c.ps {
		if r := promotions.RunOf(p); r.Project == project && r.Run == run {
			return p
		}
	}
	return nil
}

// TestOrphanedRun: the root of a run that has not ended, whose Promotion
// the cache does not hold, names that Promotion for a round (gone); no
// other action does.
func TestOrphanedRun(t *testing.T) {
	p := promotion(kargoapi.PromotionPhaseRunning, nil)
	run := promotions.RunOf(p)
	action := func(name, domain string, tmpl []byte, conds ...metav1.Condition) *v1.TaskAction {
		return &v1.TaskAction{
			Spec:   v1.TaskActionSpec{Project: run.Project, Domain: domain, RunName: run.Run, ActionName: name, TaskTemplate: tmpl},
			Status: v1.TaskActionStatus{Conditions: conds},
		}
	}
	running := metav1.Condition{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1.ReasonOf(v1.PhaseRunning)}
	succeeded := metav1.Condition{Type: v1.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: v1.ReasonOf(v1.PhaseSucceeded)}
	root := rootTemplate(p)
	for _, tc := range []struct {
		name    string
		ta      *v1.TaskAction
		cached  bool
		wantKey string
	}{
		{"a running root, its Promotion gone", action(promotions.RootAction, promotions.Domain, root, running), false, "p/" + p.Name},
		{"a queued root, its Promotion gone", action(promotions.RootAction, promotions.Domain, root), false, "p/" + p.Name},
		{"a running root, its Promotion there", action(promotions.RootAction, promotions.Domain, root, running), true, ""},
		{"an ended root", action(promotions.RootAction, promotions.Domain, root, succeeded), false, ""},
		{"a step", action(promotions.StepAction(0, 1), promotions.Domain, []byte(`{"type":"sleep"}`), running), false, ""},
		{"another domain's root", action(promotions.RootAction, "dev", root, running), false, ""},
		{"a root that names no Promotion", action(promotions.RootAction, promotions.Domain, []byte(`{"type":"kargo-promotion"}`), running), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cachedPromotions{}
			if tc.cached {
				c.ps = []*kargoapi.Promotion{p}
			}
			o := New(Config{Promotions: c})
			key, ok := o.orphanedRun(tc.ta)
			if key != tc.wantKey || ok != (tc.wantKey != "") {
				t.Errorf("orphanedRun = %q, %v; want %q", key, ok, tc.wantKey)
			}
		})
	}
}
