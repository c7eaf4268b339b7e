package rules

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// apStage is a regular Stage of project p requesting Freight of the
// Warehouse w from src.
func apStage(name string, src kargoapi.FreightSources, labels map[string]string) *kargoapi.Stage {
	return &kargoapi.Stage{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "p", Labels: labels},
		Spec: kargoapi.StageSpec{
			RequestedFreight:  []kargoapi.FreightRequest{{Origin: apOrigin("w"), Sources: src}},
			PromotionTemplate: &kargoapi.PromotionTemplate{Spec: kargoapi.PromotionTemplateSpec{Steps: []kargoapi.PromotionStep{{Uses: "compose-output"}}}},
		},
	}
}

func apOrigin(warehouse string) kargoapi.FreightOrigin {
	return kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: warehouse}
}

// apFreight is Freight of Warehouse w created age ago.
func apFreight(name string, age time.Duration) *kargoapi.Freight {
	return &kargoapi.Freight{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "p", CreationTimestamp: metav1.NewTime(time.Now().Add(-age).Truncate(time.Second))},
		Origin:     apOrigin("w"),
	}
}

// verified marks f verified in stage, and in it since ago.
func verified(f *kargoapi.Freight, stage string, since time.Duration) *kargoapi.Freight {
	f = f.DeepCopy()
	f.Status.AddVerifiedStage(stage, time.Now())
	f.Status.AddCurrentStage(stage, time.Now().Add(-since))
	return f
}

// enabled is a ProjectConfig with the given policies.
func enabled(policies ...kargoapi.PromotionPolicy) *kargoapi.ProjectConfig {
	return &kargoapi.ProjectConfig{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "p"},
		Spec: kargoapi.ProjectConfigSpec{PromotionPolicies: policies}}
}

func byName(name string, on bool) kargoapi.PromotionPolicy {
	return kargoapi.PromotionPolicy{StageSelector: &kargoapi.PromotionPolicySelector{Name: name}, AutoPromotionEnabled: on}
}

func TestAutoPromotionAllowed(t *testing.T) {
	test := apStage("test", kargoapi.FreightSources{Direct: true}, map[string]string{"tier": "dev"})
	matchLabels := func(l map[string]string, on bool) kargoapi.PromotionPolicy {
		return kargoapi.PromotionPolicy{StageSelector: &kargoapi.PromotionPolicySelector{LabelSelector: &metav1.LabelSelector{MatchLabels: l}}, AutoPromotionEnabled: on}
	}
	cases := []struct {
		name    string
		cfg     *kargoapi.ProjectConfig
		want    bool
		wantErr string
	}{
		{"no ProjectConfig", nil, false, ""},
		{"no policies", enabled(), false, ""},
		{"by the deprecated stage field", enabled(kargoapi.PromotionPolicy{Stage: "test", AutoPromotionEnabled: true}), true, ""},
		{"by stageSelector.name", enabled(byName("test", true)), true, ""},
		{"another Stage's policy", enabled(byName("uat", true)), false, ""},
		{"the matching policy disables it", enabled(byName("test", false)), false, ""},
		{"the first matching policy decides", enabled(byName("glob:t*", false), byName("test", true)), false, ""},
		{"a glob", enabled(byName("glob:te*", true)), true, ""},
		{"a regex, unanchored", enabled(byName("regex:es", true)), true, ""},
		{"a regexp that does not match", enabled(byName("regexp:^uat", true)), false, ""},
		{"labels", enabled(matchLabels(map[string]string{"tier": "dev"}, true)), true, ""},
		{"labels that differ", enabled(matchLabels(map[string]string{"tier": "prod"}, true)), false, ""},
		{"name and labels, both must match", enabled(kargoapi.PromotionPolicy{AutoPromotionEnabled: true, StageSelector: &kargoapi.PromotionPolicySelector{
			Name: "test", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}}}), false, ""},
		{"an empty selector selects every Stage", enabled(kargoapi.PromotionPolicy{StageSelector: &kargoapi.PromotionPolicySelector{}, AutoPromotionEnabled: true}), true, ""},
		{"a bad regex", enabled(byName("regex:(", true)), false, `error parsing PromotionPolicy name pattern "regex:(": error parsing regexp`},
		{"a bad label selector", enabled(kargoapi.PromotionPolicy{AutoPromotionEnabled: true, StageSelector: &kargoapi.PromotionPolicySelector{
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}}}),
			false, "error parsing PromotionPolicy label selector"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AutoPromotionAllowed(tc.cfg, test)
			if got != tc.want || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("AutoPromotionAllowed = %v, %v; want %v, error %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// It reads better whole: its cases are one table, a line each.
func TestAutoPromotions(t *testing.T) {
	direct := kargoapi.FreightSources{Direct: true}
	fromTest := kargoapi.FreightSources{Stages: []string{"test"}}
	soaked := kargoapi.FreightSources{Stages: []string{"test"}, RequiredSoakTime: &metav1.Duration{Duration: time.Hour}}
	old, newer := apFreight("f-old", time.Hour), apFreight("f-new", time.Minute)
	tieA, tieB := apFreight("f-a", time.Minute), apFreight("f-b", time.Minute)
	other := apFreight("f-other", 0)
	other.Origin = apOrigin("elsewhere")
	approved := old.DeepCopy()
	approved.Status.AddApprovedStage("uat", time.Now())
	with := func(s *kargoapi.Stage, current string) *kargoapi.Stage {
		c := &kargoapi.FreightCollection{}
		c.UpdateOrPush(kargoapi.FreightReference{Name: current, Origin: apOrigin("w")})
		s.Status.FreightHistory = kargoapi.FreightHistory{c}
		return s
	}
	promotionOf := func(stage, freight string) *kargoapi.Promotion {
		return &kargoapi.Promotion{ObjectMeta: metav1.ObjectMeta{Name: stage + ".01j." + freight, Namespace: "p"},
			Spec: kargoapi.PromotionSpec{Stage: stage, Freight: freight}}
	}
	on := enabled(byName("test", true), byName("uat", true))

	cases := []struct {
		name        string
		stage       *kargoapi.Stage
		cfg         *kargoapi.ProjectConfig
		freight     []*kargoapi.Freight
		promos      []*kargoapi.Promotion
		want        []string      // the Freight promoted
		wantRecheck time.Duration // 0: none; else at most this, and more than a minute less
	}{
		{name: "no ProjectConfig: nothing", stage: apStage("test", direct, nil), freight: []*kargoapi.Freight{newer}},
		{name: "not enabled for the Stage: nothing", stage: apStage("uat", direct, nil), cfg: enabled(byName("test", true)), freight: []*kargoapi.Freight{newer}},
		{name: "enabled, no Freight: nothing", stage: apStage("test", direct, nil), cfg: on},
		{name: "the newest Freight from the Warehouse", stage: apStage("test", direct, nil), cfg: on, freight: []*kargoapi.Freight{old, newer}, want: []string{"f-new"}},
		{name: "created in the same second: the first name", stage: apStage("test", direct, nil), cfg: on, freight: []*kargoapi.Freight{tieB, tieA}, want: []string{"f-a"}},
		{name: "another origin's Freight is not requested", stage: apStage("test", direct, nil), cfg: on, freight: []*kargoapi.Freight{other}},
		{name: "already current: nothing", stage: with(apStage("test", direct, nil), "f-new"), cfg: on, freight: []*kargoapi.Freight{old, newer}},
		{name: "newer than the current one", stage: with(apStage("test", direct, nil), "f-old"), cfg: on, freight: []*kargoapi.Freight{old, newer}, want: []string{"f-new"}},
		{name: "a Promotion of it exists: nothing", stage: apStage("test", direct, nil), cfg: on, freight: []*kargoapi.Freight{newer},
			promos: []*kargoapi.Promotion{promotionOf("test", "f-new")}},
		{name: "another Stage's Promotion of it does not count", stage: apStage("test", direct, nil), cfg: on, freight: []*kargoapi.Freight{newer},
			promos: []*kargoapi.Promotion{promotionOf("uat", "f-new")}, want: []string{"f-new"}},
		{name: "upstream, not verified: nothing", stage: apStage("uat", fromTest, nil), cfg: on, freight: []*kargoapi.Freight{newer}},
		{name: "upstream, the newest verified", stage: apStage("uat", fromTest, nil), cfg: on,
			freight: []*kargoapi.Freight{verified(old, "test", 0), newer}, want: []string{"f-old"}},
		{name: "upstream, approved for it", stage: apStage("uat", fromTest, nil), cfg: on, freight: []*kargoapi.Freight{approved}, want: []string{"f-old"}},
		{name: "upstream, soaked", stage: apStage("uat", soaked, nil), cfg: on,
			freight: []*kargoapi.Freight{verified(old, "test", 2*time.Hour)}, want: []string{"f-old"}},
		{name: "upstream, still soaking: look again when it has soaked", stage: apStage("uat", soaked, nil), cfg: on,
			freight: []*kargoapi.Freight{verified(newer, "test", 10*time.Minute)}, wantRecheck: 50 * time.Minute},
		{name: "a control-flow Stage: nothing", stage: func() *kargoapi.Stage {
			s := apStage("test", direct, nil)
			s.Spec.PromotionTemplate = nil
			return s
		}(), cfg: on, freight: []*kargoapi.Freight{newer}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := AutoPromotions(tc.stage, tc.cfg, tc.freight, tc.promos)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range plan.Promote {
				if p.Origin != "Warehouse/w" {
					t.Errorf("origin %q", p.Origin)
				}
				got = append(got, p.Freight)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("promoted %v, want %v", got, tc.want)
			}
			if r := plan.Recheck; (tc.wantRecheck == 0) != (r == 0) || r > tc.wantRecheck || r < tc.wantRecheck-time.Minute {
				t.Errorf("recheck after %v, want about %v", r, tc.wantRecheck)
			}
		})
	}
}

// A bad pattern is Kargo's error, not a decision.
func TestAutoPromotionsError(t *testing.T) {
	_, err := AutoPromotions(apStage("test", kargoapi.FreightSources{Direct: true}, nil), enabled(byName("glob:[", true)), nil, nil)
	if err == nil || !strings.Contains(err.Error(), `error parsing PromotionPolicy name pattern "glob:["`) {
		t.Errorf("error %v", err)
	}
}
