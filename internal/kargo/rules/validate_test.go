package rules

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// validStage is a regular Stage that passes every rule.
func validStage() *kargoapi.Stage {
	return &kargoapi.Stage{
		ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: "kargo-demo"},
		Spec: kargoapi.StageSpec{
			Vars: []kargoapi.ExpressionVariable{{Name: "repo", Value: "x"}},
			RequestedFreight: []kargoapi.FreightRequest{{
				Origin:  kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "kargo-demo"},
				Sources: kargoapi.FreightSources{Direct: true},
			}},
			PromotionTemplate: &kargoapi.PromotionTemplate{Spec: kargoapi.PromotionTemplateSpec{
				Vars: []kargoapi.ExpressionVariable{{Name: "_image", Value: "y"}},
				Steps: []kargoapi.PromotionStep{
					{Uses: "git-clone", As: "clone", Vars: []kargoapi.ExpressionVariable{{Name: "v1"}}},
					{Task: &kargoapi.PromotionTaskReference{Name: "deploy.app", Kind: "ClusterPromotionTask"}, As: "deploy"},
				},
			}},
			Verification: &kargoapi.Verification{
				AnalysisTemplates: []kargoapi.AnalysisTemplateReference{{Name: "smoke", Kind: "AnalysisTemplate"}},
				Args:              []kargoapi.AnalysisRunArgument{{Name: "stage", Value: "test"}},
			},
		},
	}
}

func step(s *kargoapi.Stage, i int) *kargoapi.PromotionStep {
	return &s.Spec.PromotionTemplate.Spec.Steps[i]
}

// It reads better whole: its cases are one table, a line each.
func TestValidateStage(t *testing.T) {
	const steps = "spec.promotionTemplate.spec.steps"
	cases := []struct {
		name   string
		mutate func(*kargoapi.Stage)
		want   []string // each error's Error(), in order
	}{
		{name: "valid", mutate: func(*kargoapi.Stage) {}},
		{name: "control flow: no promotionTemplate", mutate: func(s *kargoapi.Stage) { s.Spec.PromotionTemplate = nil }},
		{name: "soak time and strategies", mutate: func(s *kargoapi.Stage) {
			s.Spec.RequestedFreight[0].Sources = kargoapi.FreightSources{
				Stages: []string{"test"}, RequiredSoakTime: &metav1.Duration{Duration: 90 * time.Minute},
				AvailabilityStrategy: kargoapi.FreightAvailabilityStrategyAll,
			}
		}},
		{name: "empty alias is skipped, aliases are trimmed", mutate: func(s *kargoapi.Stage) {
			step(s, 0).As = "  "
			step(s, 1).As = " deploy "
		}},
		{name: "step-N inside a longer alias is not reserved", mutate: func(s *kargoapi.Stage) { step(s, 0).As = "my-step-1" }},

		// Webhook rules.
		{
			name: "duplicate origin (first duplicate only)",
			mutate: func(s *kargoapi.Stage) {
				r := s.Spec.RequestedFreight[0]
				s.Spec.RequestedFreight = append(s.Spec.RequestedFreight, r, r)
			},
			want: []string{`spec.requestedFreight: Invalid value: [{"origin":{"kind":"Warehouse","name":"kargo-demo"},"sources":{"direct":true}},{"origin":{"kind":"Warehouse","name":"kargo-demo"},"sources":{"direct":true}},{"origin":{"kind":"Warehouse","name":"kargo-demo"},"sources":{"direct":true}}]: freight with origin Warehouse/kargo-demo requested multiple times in spec.requestedFreight`},
		},
		{
			name: "duplicate alias (trimmed)",
			mutate: func(s *kargoapi.Stage) {
				step(s, 1).As = " clone\t"
				s.Spec.PromotionTemplate.Spec.Steps = append(s.Spec.PromotionTemplate.Spec.Steps, kargoapi.PromotionStep{Uses: "x", As: "clone"})
			},
			want: []string{
				steps + `[1].as: Invalid value: "clone": step alias duplicates that of spec.promotionTemplate.spec.steps[0]`,
				steps + `[2].as: Invalid value: "clone": step alias duplicates that of spec.promotionTemplate.spec.steps[0]`,
			},
		},
		{
			name:   "reserved step alias",
			mutate: func(s *kargoapi.Stage) { step(s, 0).As = "step-1" },
			want:   []string{steps + `[0].as: Invalid value: "step-1": step alias is reserved`},
		},
		{
			name:   "reserved task alias, duplicated",
			mutate: func(s *kargoapi.Stage) { step(s, 0).As = "task-12"; step(s, 1).As = "task-12" },
			want: []string{
				steps + `[0].as: Invalid value: "task-12": step alias is reserved`,
				steps + `[1].as: Invalid value: "task-12": step alias duplicates that of spec.promotionTemplate.spec.steps[0]`,
				steps + `[1].as: Invalid value: "task-12": step alias is reserved`,
			},
		},
		{
			name:   "task step with if",
			mutate: func(s *kargoapi.Stage) { step(s, 1).If = "${{ success() }}" },
			want:   []string{steps + `[1].if: Forbidden: PromotionTemplate step referencing a task cannot have an 'if' condition`},
		},
		{
			name:   "task step with config",
			mutate: func(s *kargoapi.Stage) { step(s, 1).Config = &apiextensionsv1.JSON{Raw: []byte(`{}`)} },
			want:   []string{steps + `[1].config: Forbidden: PromotionTemplate step referencing a task cannot have a config`},
		},
		{
			name: "uses step may have if and config",
			mutate: func(s *kargoapi.Stage) {
				step(s, 0).If = "${{ always() }}"
				step(s, 0).Config = &apiextensionsv1.JSON{Raw: []byte(`{}`)}
			},
		},

		// CEL rules.
		{
			name:   "uses and task",
			mutate: func(s *kargoapi.Stage) { step(s, 1).Uses = "git-clone" },
			want:   []string{steps + `[1]: Invalid value: PromotionTemplate step must have exactly one of uses or task set`},
		},
		{
			name:   "neither uses nor task (also reads as an empty uses)",
			mutate: func(s *kargoapi.Stage) { step(s, 0).Uses = "" },
			want: []string{
				steps + `[0].uses: Invalid value: "": spec.promotionTemplate.spec.steps[0].uses in body should be at least 1 chars long`,
				steps + `[0]: Invalid value: PromotionTemplate step must have exactly one of uses or task set`,
			},
		},
		{
			name:   "task with continueOnError",
			mutate: func(s *kargoapi.Stage) { step(s, 1).ContinueOnError = true },
			want:   []string{steps + `[1]: Invalid value: PromotionTemplate step referencing a task cannot set continueOnError`},
		},
		{
			name:   "task with retry",
			mutate: func(s *kargoapi.Stage) { step(s, 1).Retry = &kargoapi.PromotionStepRetry{ErrorThreshold: 2} },
			want:   []string{steps + `[1]: Invalid value: PromotionTemplate step referencing a task cannot set retry`},
		},
		{
			name: "uses step may set continueOnError and retry",
			mutate: func(s *kargoapi.Stage) {
				step(s, 0).ContinueOnError = true
				step(s, 0).Retry = &kargoapi.PromotionStepRetry{}
			},
		},

		// Schema rules.
		{name: "spec missing", mutate: func(s *kargoapi.Stage) { s.Spec = kargoapi.StageSpec{} }, want: []string{"spec: Required value"}},
		{
			name:   "requestedFreight missing",
			mutate: func(s *kargoapi.Stage) { s.Spec.RequestedFreight = nil },
			want:   []string{"spec.requestedFreight: Required value"},
		},
		{
			name:   "requestedFreight empty",
			mutate: func(s *kargoapi.Stage) { s.Spec.RequestedFreight = []kargoapi.FreightRequest{} },
			want:   []string{"spec.requestedFreight: Invalid value: 0: spec.requestedFreight in body should have at least 1 items"},
		},
		{
			name:   "origin missing",
			mutate: func(s *kargoapi.Stage) { s.Spec.RequestedFreight[0].Origin = kargoapi.FreightOrigin{} },
			want:   []string{"spec.requestedFreight[0].origin: Required value"},
		},
		{
			name:   "origin kind missing",
			mutate: func(s *kargoapi.Stage) { s.Spec.RequestedFreight[0].Origin.Kind = "" },
			want:   []string{"spec.requestedFreight[0].origin.kind: Required value"},
		},
		{
			name:   "origin kind unsupported",
			mutate: func(s *kargoapi.Stage) { s.Spec.RequestedFreight[0].Origin.Kind = "Repository" },
			want:   []string{`spec.requestedFreight[0].origin.kind: Unsupported value: "Repository": supported values: "Warehouse"`},
		},
		{
			name:   "origin name missing",
			mutate: func(s *kargoapi.Stage) { s.Spec.RequestedFreight[0].Origin.Name = "" },
			want:   []string{"spec.requestedFreight[0].origin.name: Required value"},
		},
		{
			name:   "availabilityStrategy unsupported",
			mutate: func(s *kargoapi.Stage) { s.Spec.RequestedFreight[0].Sources.AvailabilityStrategy = "Any" },
			want:   []string{`spec.requestedFreight[0].sources.availabilityStrategy: Unsupported value: "Any": supported values: "All", "OneOf", ""`},
		},
		{
			name: "requiredSoakTime pattern",
			mutate: func(s *kargoapi.Stage) {
				s.Spec.RequestedFreight[0].Sources.RequiredSoakTime = &metav1.Duration{Duration: -time.Hour}
			},
			want: []string{`spec.requestedFreight[0].sources.requiredSoakTime: Invalid value: "-1h0m0s": spec.requestedFreight[0].sources.requiredSoakTime in body should match '^([0-9]+(\.[0-9]+)?(s|m|h))+$'`},
		},
		{
			name: "requiredSoakTime below a second",
			mutate: func(s *kargoapi.Stage) {
				s.Spec.RequestedFreight[0].Sources.RequiredSoakTime = &metav1.Duration{Duration: 500 * time.Millisecond}
			},
			want: []string{`spec.requestedFreight[0].sources.requiredSoakTime: Invalid value: "500ms": spec.requestedFreight[0].sources.requiredSoakTime in body should match '^([0-9]+(\.[0-9]+)?(s|m|h))+$'`},
		},
		{
			name:   "steps empty",
			mutate: func(s *kargoapi.Stage) { s.Spec.PromotionTemplate.Spec.Steps = []kargoapi.PromotionStep{} },
			want:   []string{steps + ": Invalid value: 0: spec.promotionTemplate.spec.steps in body should have at least 1 items"},
		},
		{
			name:   "task name missing",
			mutate: func(s *kargoapi.Stage) { step(s, 1).Task.Name = "" },
			want:   []string{steps + "[1].task.name: Required value"},
		},
		{
			name:   "task name pattern",
			mutate: func(s *kargoapi.Stage) { step(s, 1).Task.Name = "Deploy_App" },
			want:   []string{steps + `[1].task.name: Invalid value: "Deploy_App": spec.promotionTemplate.spec.steps[1].task.name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'`},
		},
		{
			name:   "task name of 253 characters",
			mutate: func(s *kargoapi.Stage) { step(s, 1).Task.Name = strings.Repeat("a", 253) },
		},
		{
			name:   "task name too long",
			mutate: func(s *kargoapi.Stage) { step(s, 1).Task.Name = strings.Repeat("a", 254) },
			want:   []string{steps + "[1].task.name: Too long: may not be more than 253 bytes"},
		},
		{
			name:   "task kind unsupported",
			mutate: func(s *kargoapi.Stage) { step(s, 1).Task.Kind = "Task" },
			want:   []string{steps + `[1].task.kind: Unsupported value: "Task": supported values: "PromotionTask", "ClusterPromotionTask"`},
		},
		{
			name:   "stage var name pattern",
			mutate: func(s *kargoapi.Stage) { s.Spec.Vars[0].Name = "1st-repo" },
			want:   []string{`spec.vars[0].name: Invalid value: "1st-repo": spec.vars[0].name in body should match '^[a-zA-Z_]\w*$'`},
		},
		{
			name:   "stage var name missing",
			mutate: func(s *kargoapi.Stage) { s.Spec.Vars[0].Name = "" },
			want:   []string{"spec.vars[0].name: Required value"},
		},
		{
			name:   "template var name pattern",
			mutate: func(s *kargoapi.Stage) { s.Spec.PromotionTemplate.Spec.Vars[0].Name = "image-repo" },
			want:   []string{`spec.promotionTemplate.spec.vars[0].name: Invalid value: "image-repo": spec.promotionTemplate.spec.vars[0].name in body should match '^[a-zA-Z_]\w*$'`},
		},
		{
			name:   "step var name pattern",
			mutate: func(s *kargoapi.Stage) { step(s, 0).Vars[0].Name = "repo.url" },
			want:   []string{steps + `[0].vars[0].name: Invalid value: "repo.url": spec.promotionTemplate.spec.steps[0].vars[0].name in body should match '^[a-zA-Z_]\w*$'`},
		},
		{
			name:   "step var name missing",
			mutate: func(s *kargoapi.Stage) { step(s, 0).Vars[0].Name = "" },
			want:   []string{steps + "[0].vars[0].name: Required value"},
		},
		{
			name:   "analysisTemplates kind unsupported",
			mutate: func(s *kargoapi.Stage) { s.Spec.Verification.AnalysisTemplates[0].Kind = "Template" },
			want:   []string{`spec.verification.analysisTemplates[0].kind: Unsupported value: "Template": supported values: "AnalysisTemplate", "ClusterAnalysisTemplate"`},
		},
		{
			name:   "analysisTemplates name missing",
			mutate: func(s *kargoapi.Stage) { s.Spec.Verification.AnalysisTemplates[0].Name = "" },
			want:   []string{"spec.verification.analysisTemplates[0].name: Required value"},
		},
		{
			name:   "verification arg name and value missing",
			mutate: func(s *kargoapi.Stage) { s.Spec.Verification.Args[0] = kargoapi.AnalysisRunArgument{} },
			want:   []string{"spec.verification.args[0].name: Required value", "spec.verification.args[0].value: Required value"},
		},
		{
			name: "schema errors come before webhook errors",
			mutate: func(s *kargoapi.Stage) {
				step(s, 0).As = "step-1"
				s.Spec.Vars[0].Name = ""
			},
			want: []string{"spec.vars[0].name: Required value", steps + `[0].as: Invalid value: "step-1": step alias is reserved`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validStage()
			tc.mutate(s)
			errs := ValidateStage(s)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("ValidateStage:\n got  %q\n want %q", got, tc.want)
			}
		})
	}
}

func TestValidateStageWebhookOnly(t *testing.T) {
	s := validStage()
	s.Spec.Vars[0].Name = "" // a schema rule: not the webhook's
	step(s, 1).If = "x"
	errs := ValidateStageWebhook(s)
	if len(errs) != 1 || errs[0].Field != "spec.promotionTemplate.spec.steps[1].if" {
		t.Errorf("ValidateStageWebhook: %v", errs)
	}
	if errs := ValidateStage(nil); len(errs) != 1 || errs[0].Error() != "spec: Required value" {
		t.Errorf("ValidateStage(nil): %v", errs)
	}
}

func TestValidateProjectName(t *testing.T) {
	cases := []struct {
		name string
		want string
	}{
		{"kargo-demo", ""},
		{"a", ""},
		{"", "metadata.namespace: Required value"},
		{"Kargo", `metadata.namespace: Invalid value: "Kargo": a lowercase RFC 1123 label must consist of`},
		{"kargo.demo", `metadata.namespace: Invalid value: "kargo.demo": must not contain dots`},
		{strings.Repeat("a", 64), "must be no more than 63 characters"},
	}
	for _, tc := range cases {
		errs := ValidateProjectName(tc.name)
		if tc.want == "" {
			if len(errs) > 0 {
				t.Errorf("%q: %v", tc.name, errs)
			}
			continue
		}
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.name, errs, tc.want)
		}
	}
}

// TestValidateStageFixtures checks the e2e fixtures: each invalid one gets
// an error on its "# field:" containing its "# expect:", the valid ones none.
// (internal/controlplane checks the API server agrees.)
func TestValidateStageFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "test", "e2e", "testdata", "stages", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var expect, fieldPath string
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "# expect: "); ok {
				expect = v
			}
			if v, ok := strings.CutPrefix(sc.Text(), "# field: "); ok {
				fieldPath = v
			}
		}
		if strings.HasPrefix(filepath.Base(f), "invalid-") != (expect != "" && fieldPath != "") {
			t.Errorf("%s: invalid-* fixtures need # expect: and # field:, others neither", f)
		}
		for _, doc := range bytes.Split(b, []byte("\n---\n")) {
			var s kargoapi.Stage
			if err := yaml.UnmarshalStrict(doc, &s); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			errs := ValidateStage(&s)
			if expect == "" {
				if len(errs) > 0 {
					t.Errorf("%s: %v", f, errs)
				}
				continue
			}
			found := false
			for _, e := range errs {
				found = found || e.Field == fieldPath && strings.Contains(e.Error(), expect)
			}
			if !found {
				t.Errorf("%s: no error on %s containing %q in %v", f, fieldPath, expect, errs)
			}
		}
	}
}
