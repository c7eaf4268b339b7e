package v1alpha1

import (
	"fmt"
	"testing"
)

func TestIsControlFlow(t *testing.T) {
	for _, tc := range []struct {
		pt   *PromotionTemplate
		want bool
	}{
		{nil, true},
		{&PromotionTemplate{}, true},
		{&PromotionTemplate{Spec: PromotionTemplateSpec{Steps: []PromotionStep{{Uses: "x"}}}}, false},
	} {
		s := &Stage{Spec: StageSpec{PromotionTemplate: tc.pt}}
		if got := s.IsControlFlow(); got != tc.want {
			t.Errorf("IsControlFlow(%+v) = %v", tc.pt, got)
		}
	}
}

func TestFreightOrigin(t *testing.T) {
	a := &FreightOrigin{Kind: FreightOriginKindWarehouse, Name: "w"}
	if a.String() != "Warehouse/w" || (*FreightOrigin)(nil).String() != "" {
		t.Errorf("String: %q", a.String())
	}
	b := *a
	if !a.Equals(&b) || a.Equals(nil) || !(*FreightOrigin)(nil).Equals(nil) || a.Equals(&FreightOrigin{Kind: "Warehouse", Name: "v"}) {
		t.Error("Equals")
	}
}

func TestFreightCollectionAndHistory(t *testing.T) {
	var nilCol *FreightCollection
	if nilCol.Includes("x") || nilCol.References() != nil {
		t.Error("nil collection")
	}
	c := &FreightCollection{}
	c.UpdateOrPush(
		FreightReference{Name: "f2", Origin: FreightOrigin{Kind: "Warehouse", Name: "b"}},
		FreightReference{Name: "f1", Origin: FreightOrigin{Kind: "Warehouse", Name: "a"}},
	)
	refs := c.References()
	if len(refs) != 2 || refs[0].Name != "f1" || refs[1].Name != "f2" || !c.Includes("f2") || c.Includes("f3") || c.ID == "" {
		t.Errorf("collection: %+v", c)
	}
	id := c.ID
	c.UpdateOrPush(FreightReference{Name: "f3", Origin: FreightOrigin{Kind: "Warehouse", Name: "b"}})
	if c.Includes("f2") || !c.Includes("f3") || c.ID == id {
		t.Errorf("update of an origin: %+v", c)
	}

	var h FreightHistory
	if h.Current() != nil {
		t.Error("empty history has a current")
	}
	for i := range 12 {
		h.Record(&FreightCollection{ID: fmt.Sprint(i)})
	}
	if len(h) != 10 || h.Current().ID != "11" || h[9].ID != "2" {
		t.Errorf("history: len %d, current %s", len(h), h.Current().ID)
	}
}

func TestVerificationInfo(t *testing.T) {
	var s VerificationInfoStack
	if s.Current() != nil {
		t.Error("empty stack has a current")
	}
	s.UpdateOrPush(VerificationInfo{ID: "a", Phase: VerificationPhaseRunning})
	s.UpdateOrPush(VerificationInfo{ID: "b", Phase: VerificationPhasePending})
	s.UpdateOrPush(VerificationInfo{ID: "a", Phase: VerificationPhaseSuccessful})
	if len(s) != 2 || s.Current().ID != "b" || s[1].Phase != VerificationPhaseSuccessful {
		t.Errorf("stack: %+v", s)
	}
	c := &FreightCollection{VerificationHistory: s}
	if !c.HasNonTerminalVerification() {
		t.Error("Pending is not terminal")
	}
	if (&VerificationInfo{}).HasAnalysisRun() || !(&VerificationInfo{AnalysisRun: &AnalysisRunReference{}}).HasAnalysisRun() {
		t.Error("HasAnalysisRun")
	}
	for p, want := range map[VerificationPhase]bool{
		VerificationPhasePending: false, VerificationPhaseRunning: false, VerificationPhaseSuccessful: true,
		VerificationPhaseFailed: true, VerificationPhaseError: true, VerificationPhaseAborted: true, VerificationPhaseInconclusive: true,
	} {
		if p.IsTerminal() != want {
			t.Errorf("%s.IsTerminal() = %v", p, !want)
		}
	}
}

func TestPromotionStepGetAlias(t *testing.T) {
	cases := []struct {
		step PromotionStep
		i    int
		want string
	}{
		{PromotionStep{As: "commit"}, 0, "commit"},
		{PromotionStep{Uses: "git-clone"}, 0, "step-1"},
		{PromotionStep{Task: &PromotionTaskReference{Name: "t"}}, 2, "task-3"},
	}
	for _, tc := range cases {
		if got := tc.step.GetAlias(tc.i); got != tc.want {
			t.Errorf("GetAlias = %q, want %q", got, tc.want)
		}
	}
	if HealthStateHealthy.Merge(HealthStateUnknown) != HealthStateUnknown || HealthStateUnhealthy.Merge(HealthStateProgressing) != HealthStateUnhealthy {
		t.Error("HealthState.Merge")
	}
}
