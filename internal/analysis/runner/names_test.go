package runner

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/analysis/rules"
)

func TestNames(t *testing.T) {
	ar := func(name string, metrics ...string) *rolloutsapi.AnalysisRun {
		r := &rolloutsapi.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "demo"}}
		for _, m := range metrics {
			r.Spec.Metrics = append(r.Spec.Metrics, rolloutsapi.Metric{Name: m})
		}
		return r
	}
	cases := []struct {
		run     *rolloutsapi.AnalysisRun
		metric  string
		wantRun string
		wantAct string
	}{
		{ar("uat.01JCZ5N8W2Y9Q4V7T3R6P1M0KX.abc123", "health"), "health", "01jcz5n8w2y9q4v7t3r6p1m0kx", "health-3"},
		{ar("check", "success-rate"), "success-rate", "a20f65c28671b40937c5bf23ac", "success-rate-3"},
		{ar("check", "a", "Error Rate"), "Error Rate", "a20f65c28671b40937c5bf23ac", "metric1-3"},
		{ar("check", "x", "y", "-bad-"), "-bad-", "a20f65c28671b40937c5bf23ac", "metric2-3"},
	}
	for _, tc := range cases {
		id := measurementID(tc.run, rules.Due{Metric: tc.metric, Number: 3})
		if id.Project != "demo" || id.Domain != Domain || id.Run != tc.wantRun || id.Name != tc.wantAct {
			t.Errorf("%s/%s: %+v, want run %s action %s", tc.run.Name, tc.metric, id, tc.wantRun, tc.wantAct)
		}
		if r := rootID(tc.run); r.Name != RootAction || r.Run != tc.wantRun {
			t.Errorf("root of %s: %+v", tc.run.Name, r)
		}
	}
}
