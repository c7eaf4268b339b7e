package v1alpha1

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsFreightAvailable(t *testing.T) {
	const ns = "kargo-demo"
	warehouse := FreightOrigin{Kind: FreightOriginKindWarehouse, Name: "w"}
	verified := func(stages ...string) map[string]VerifiedStage {
		m := map[string]VerifiedStage{}
		for _, s := range stages {
			m[s] = VerifiedStage{VerifiedAt: &metav1.Time{Time: time.Now()}}
		}
		return m
	}
	hour := &metav1.Duration{Duration: time.Hour}
	stage := func(src FreightSources) *Stage {
		return &Stage{
			ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: ns},
			Spec:       StageSpec{RequestedFreight: []FreightRequest{{Origin: warehouse, Sources: src}}},
		}
	}
	freight := func(st FreightStatus) *Freight {
		return &Freight{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: ns}, Origin: warehouse, Status: st}
	}
	cases := []struct {
		name    string
		stage   *Stage
		freight *Freight
		want    bool
	}{
		{"nil freight", stage(FreightSources{Direct: true}), nil, false},
		{"nil stage", nil, freight(FreightStatus{}), false},
		{"other namespace", stage(FreightSources{Direct: true}),
			&Freight{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: "other"}, Origin: warehouse}, false},
		{"direct", stage(FreightSources{Direct: true}), freight(FreightStatus{}), true},
		{"other origin", stage(FreightSources{Direct: true}),
			&Freight{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: ns}, Origin: FreightOrigin{Kind: FreightOriginKindWarehouse, Name: "x"}}, false},
		{"approved overrides everything", stage(FreightSources{Stages: []string{"uat"}}),
			&Freight{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: ns}, Origin: FreightOrigin{Kind: FreightOriginKindWarehouse, Name: "x"},
				Status: FreightStatus{ApprovedFor: map[string]ApprovedStage{"prod": {}}}}, true},
		{"not verified upstream", stage(FreightSources{Stages: []string{"uat"}}), freight(FreightStatus{}), false},
		{"verified upstream (OneOf default)", stage(FreightSources{Stages: []string{"uat", "qa"}}),
			freight(FreightStatus{VerifiedIn: verified("qa")}), true},
		{"verified in another stage only", stage(FreightSources{Stages: []string{"uat"}}),
			freight(FreightStatus{VerifiedIn: verified("dev")}), false},
		{"All: one of two", stage(FreightSources{Stages: []string{"uat", "qa"}, AvailabilityStrategy: FreightAvailabilityStrategyAll}),
			freight(FreightStatus{VerifiedIn: verified("qa")}), false},
		{"All: both", stage(FreightSources{Stages: []string{"uat", "qa"}, AvailabilityStrategy: FreightAvailabilityStrategyAll}),
			freight(FreightStatus{VerifiedIn: verified("qa", "uat")}), true},
		{"soak: not long enough", stage(FreightSources{Stages: []string{"uat"}, RequiredSoakTime: hour}),
			freight(FreightStatus{
				VerifiedIn:  verified("uat"),
				CurrentlyIn: map[string]CurrentStage{"uat": {Since: &metav1.Time{Time: time.Now().Add(-time.Minute)}}},
			}), false},
		{"soak: current soak long enough", stage(FreightSources{Stages: []string{"uat"}, RequiredSoakTime: hour}),
			freight(FreightStatus{
				VerifiedIn:  verified("uat"),
				CurrentlyIn: map[string]CurrentStage{"uat": {Since: &metav1.Time{Time: time.Now().Add(-2 * time.Hour)}}},
			}), true},
		{"soak: completed soak long enough", stage(FreightSources{Stages: []string{"uat"}, RequiredSoakTime: hour}),
			freight(FreightStatus{VerifiedIn: map[string]VerifiedStage{"uat": {LongestCompletedSoak: &metav1.Duration{Duration: 90 * time.Minute}}}}), true},
		{"soak: not verified, long in use", stage(FreightSources{Stages: []string{"uat"}, RequiredSoakTime: hour}),
			freight(FreightStatus{CurrentlyIn: map[string]CurrentStage{"uat": {Since: &metav1.Time{Time: time.Now().Add(-2 * time.Hour)}}}}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.stage.IsFreightAvailable(tc.freight); got != tc.want {
				t.Errorf("IsFreightAvailable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFreightStatusHelpers(t *testing.T) {
	var st FreightStatus
	t0 := time.Now().Add(-time.Hour)
	st.AddCurrentStage("uat", t0)
	st.AddCurrentStage("uat", time.Now()) // already in: kept
	if !st.CurrentlyIn["uat"].Since.Time.Equal(t0) {
		t.Fatalf("AddCurrentStage replaced since: %v", st.CurrentlyIn)
	}
	st.AddVerifiedStage("uat", t0)
	st.AddApprovedStage("prod", t0)
	f := &Freight{Status: st}
	if !f.IsCurrentlyIn("uat") || !f.IsVerifiedIn("uat") || !f.IsApprovedFor("prod") || f.IsApprovedFor("uat") {
		t.Fatalf("helpers: %+v", f.Status)
	}
	if soak := f.GetLongestSoak("uat"); soak < time.Hour-time.Second {
		t.Errorf("GetLongestSoak = %v", soak)
	}
	if f.GetLongestSoak("prod") != 0 {
		t.Error("soak where not verified")
	}
	f.Status.RemoveCurrentStage("uat")
	if f.IsCurrentlyIn("uat") || f.Status.VerifiedIn["uat"].LongestCompletedSoak.Duration < time.Hour-time.Second {
		t.Errorf("RemoveCurrentStage: %+v", f.Status)
	}
	if !f.HasSoakedIn("uat", &metav1.Duration{Duration: 59 * time.Minute}) || f.HasSoakedIn("uat", &metav1.Duration{Duration: 2 * time.Hour}) ||
		!f.HasSoakedIn("uat", nil) || (*Freight)(nil).HasSoakedIn("uat", nil) {
		t.Error("HasSoakedIn")
	}

	if err := f.Status.UpsertMetadata("k", map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := f.Status.UpsertMetadata("", 1); err == nil {
		t.Error("empty key accepted")
	}
	var got map[string]int
	if ok, err := f.Status.GetMetadata("k", &got); !ok || err != nil || got["a"] != 1 {
		t.Errorf("GetMetadata: %v %v %v", ok, err, got)
	}
	if ok, _ := f.Status.GetMetadata("missing", &got); ok {
		t.Error("GetMetadata of a missing key")
	}

	ref := (&Freight{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Origin: FreightOrigin{Kind: "Warehouse", Name: "w"},
		Images: []Image{{RepoURL: "r", Tag: "1"}}}).Reference()
	if ref.Name != "n" || ref.Origin.Name != "w" || len(ref.Images) != 1 {
		t.Errorf("Reference: %+v", ref)
	}
}

func TestGitCommitEquality(t *testing.T) {
	a := &GitCommit{RepoURL: "r", ID: "1", Message: "m"}
	b := &GitCommit{RepoURL: "r", ID: "1"}
	if !a.Equals(b) || a.DeepEquals(b) || !a.DeepEquals(a) || a.Equals(nil) || !(*GitCommit)(nil).Equals(nil) {
		t.Error("GitCommit equality")
	}
}

func TestPromotionPhaseAndAbortRequest(t *testing.T) {
	for p, want := range map[PromotionPhase]bool{
		"": false, PromotionPhasePending: false, PromotionPhaseRunning: false, PromotionPhaseSucceeded: true,
		PromotionPhaseFailed: true, PromotionPhaseErrored: true, PromotionPhaseAborted: true,
	} {
		if p.IsTerminal() != want {
			t.Errorf("%q.IsTerminal() = %v", p, !want)
		}
	}
	r := &AbortPromotionRequest{Action: AbortActionTerminate, Actor: "admin"}
	var back AbortPromotionRequest
	if err := json.Unmarshal([]byte(r.String()), &back); err != nil || !back.Equals(r) {
		t.Errorf("round trip %q: %v", r.String(), err)
	}
	if (&AbortPromotionRequest{}).String() != "" || (*AbortPromotionRequest)(nil).String() != "" {
		t.Error("empty request has a string")
	}
	metas := StepExecutionMetadataList{
		{Status: PromotionStepStatusSucceeded}, {Status: PromotionStepStatusFailed, ContinueOnError: true},
	}
	if metas.HasFailures() {
		t.Error("continueOnError failure counted")
	}
	if !append(metas, StepExecutionMetadata{Status: PromotionStepStatusErrored}).HasFailures() {
		t.Error("errored step not counted")
	}
}
