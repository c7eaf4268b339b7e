package verification

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

type templatesByName map[string]rolloutsapi.AnalysisTemplateSpec

func (t templatesByName) Template(_ context.Context, _, name string) (*rolloutsapi.AnalysisTemplate, error) {
	s, ok := t[name]
	if !ok {
		return nil, errors.New("not found")
	}
	return &rolloutsapi.AnalysisTemplate{Spec: s}, nil
}

func (t templatesByName) ClusterTemplate(_ context.Context, name string) (*rolloutsapi.ClusterAnalysisTemplate, error) {
	s, ok := t["cluster/"+name]
	if !ok {
		return nil, errors.New("not found")
	}
	return &rolloutsapi.ClusterAnalysisTemplate{Spec: s}, nil
}

func str(s string) *string { return &s }

func metric(name string) rolloutsapi.Metric { return rolloutsapi.Metric{Name: name} }

func TestBuild(t *testing.T) {
	tmpl := templatesByName{
		"up":           {Metrics: []rolloutsapi.Metric{metric("up")}, Args: []rolloutsapi.Argument{{Name: "url"}, {Name: "code", Value: str("200")}}},
		"latency":      {Metrics: []rolloutsapi.Metric{metric("latency")}, Args: []rolloutsapi.Argument{{Name: "url"}}, DryRun: []rolloutsapi.DryRun{{MetricName: "latency"}}},
		"cluster/also": {Metrics: []rolloutsapi.Metric{metric("also")}},
		"dup":          {Metrics: []rolloutsapi.Metric{metric("up")}},
		"conflict":     {Metrics: []rolloutsapi.Metric{metric("c")}, Args: []rolloutsapi.Argument{{Name: "code", Value: str("500")}}},
		"dupdry":       {Metrics: []rolloutsapi.Metric{metric("d")}, DryRun: []rolloutsapi.DryRun{{MetricName: "latency"}}},
	}
	stage := func(refs []string, args ...kargoapi.AnalysisRunArgument) *kargoapi.Stage {
		s := &kargoapi.Stage{ObjectMeta: metav1.ObjectMeta{Name: "uat", Namespace: "demo"}}
		s.Spec.Vars = []kargoapi.ExpressionVariable{{Name: "host", Value: "${{ ctx.stage }}.example"}}
		v := &kargoapi.Verification{Args: args, AnalysisRunMetadata: &kargoapi.AnalysisRunMetadata{Labels: map[string]string{"team": "a"}}}
		for _, r := range refs {
			ref := kargoapi.AnalysisTemplateReference{Name: r}
			if n, ok := strings.CutPrefix(r, "cluster/"); ok {
				ref = kargoapi.AnalysisTemplateReference{Name: n, Kind: "ClusterAnalysisTemplate"}
			}
			v.AnalysisTemplates = append(v.AnalysisTemplates, ref)
		}
		s.Spec.Verification = v
		return s
	}
	cases := []struct {
		name    string
		stage   *kargoapi.Stage
		metrics []string
		args    map[string]string
		err     string
	}{
		{
			name:    "templates flattened, args evaluated with vars and ctx",
			stage:   stage([]string{"up", "latency", "cluster/also"}, kargoapi.AnalysisRunArgument{Name: "url", Value: "https://${{ vars.host }}/${{ ctx.project }}"}),
			metrics: []string{"up", "latency", "also"},
			args:    map[string]string{"url": "https://uat.example/demo", "code": "200"},
		},
		{
			name:  "an argument no one gives",
			stage: stage([]string{"up"}),
			err:   `build spec: build arguments: merge arguments: validate merged arguments: unresolved argument "url": neither Value nor ValueFrom is set`,
		},
		{
			name:  "a template that is not there",
			stage: stage([]string{"nope"}),
			err:   `get analysis templates: get AnalysisRun "nope" in namespace "demo": not found`,
		},
		{
			name:  "one metric in two templates",
			stage: stage([]string{"up", "dup"}, kargoapi.AnalysisRunArgument{Name: "url", Value: "x"}),
			err:   `build spec: flatten templates: flatten metrics: duplicate metric name: "up"`,
		},
		{
			name:  "one metric in dry run twice",
			stage: stage([]string{"latency", "dupdry"}, kargoapi.AnalysisRunArgument{Name: "url", Value: "x"}),
			err:   `build spec: flatten templates: flatten dry-run metrics: validate dry-run metrics: duplicate dry-run metric name: "latency"`,
		},
		{
			name:  "two values for one argument",
			stage: stage([]string{"up", "conflict"}, kargoapi.AnalysisRunArgument{Name: "url", Value: "x"}),
			err:   `build spec: flatten templates: flatten arguments: conflicting values for argument "code": "200" and "500"`,
		},
		{
			name:  "an argument whose expression is not a string",
			stage: stage([]string{"up"}, kargoapi.AnalysisRunArgument{Name: "url", Value: "${{ 1 + 1 }}"}),
			err:   `build spec: build arguments: evaluated argument "url" value is not a string but`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := kargoapi.FreightCollection{ID: "fc123"}
			ar, err := build(context.Background(), tmpl, request{stage: tc.stage, freight: fc, promotion: "uat.01"})
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, m := range ar.Spec.Metrics {
				names = append(names, m.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.metrics, ",") {
				t.Errorf("metrics %v, want %v", names, tc.metrics)
			}
			for _, a := range ar.Spec.Args {
				if a.Value == nil || *a.Value != tc.args[a.Name] {
					t.Errorf("arg %s = %v, want %q", a.Name, a.Value, tc.args[a.Name])
				}
			}
			if len(ar.Spec.Args) != len(tc.args) {
				t.Errorf("%d args, want %d", len(ar.Spec.Args), len(tc.args))
			}
			parts := strings.Split(ar.Name, ".")
			if len(parts) != 3 || parts[0] != "uat" || parts[2] != "fc123" || len(parts[1]) != 26 || ar.Name != strings.ToLower(ar.Name) {
				t.Errorf("name %q, want uat.<ulid>.fc123 in lower case", ar.Name)
			}
			l := ar.Labels
			if l[kargoapi.LabelKeyStage] != "uat" || l[kargoapi.LabelKeyFreightCollection] != "fc123" || l["team"] != "a" {
				t.Errorf("labels %v", l)
			}
			if ar.Annotations[kargoapi.AnnotationKeyPromotion] != "uat.01" || len(ar.Spec.DryRun) != 1 {
				t.Errorf("annotations %v, dryRun %v", ar.Annotations, ar.Spec.DryRun)
			}
		})
	}
}
