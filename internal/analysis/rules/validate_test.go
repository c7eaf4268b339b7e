package rules

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

func web() rolloutsapi.MetricProvider {
	return rolloutsapi.MetricProvider{Web: &rolloutsapi.WebMetric{URL: "http://example.test/health"}}
}

func num(i int) *intstr.IntOrString    { v := intstr.FromInt(i); return &v }
func str(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
func ptr(s string) *string             { return &s }

// Rollouts' messages (utils/analysis/factory.go ValidateMetric), one case
// each, and the field each is reported at.
func TestValidateMetric(t *testing.T) {
	for _, tc := range []struct {
		name         string
		metric       rolloutsapi.Metric
		field, error string
	}{
		{"valid", rolloutsapi.Metric{Name: "m", Provider: web()}, "", ""},
		{"no provider", rolloutsapi.Metric{Name: "m"}, "provider", "no provider specified"},
		{"two providers", rolloutsapi.Metric{Name: "m", Provider: rolloutsapi.MetricProvider{
			Web: web().Web, Datadog: &apiextensionsv1.JSON{Raw: []byte(`{"query":"q"}`)}}}, "provider", "multiple providers specified"},
		{"two plugins", rolloutsapi.Metric{Name: "m", Provider: rolloutsapi.MetricProvider{Plugin: map[string]apiextensionsv1.JSON{
			"a": {Raw: []byte(`{}`)}, "b": {Raw: []byte(`{}`)}}}}, "provider", "multiple providers specified"},
		{"count below failureLimit", rolloutsapi.Metric{Name: "m", Provider: web(), Interval: "1m", Count: num(2), FailureLimit: num(3)},
			"count", "count (2) must be >= failureLimit + consecutiveSuccessLimit (3 + 0) if both >= 0"},
		{"count below consecutiveSuccessLimit", rolloutsapi.Metric{Name: "m", Provider: web(), Interval: "1m", Count: num(2), FailureLimit: num(-1), ConsecutiveSuccessLimit: num(3)},
			"count", "count must be >= consecutiveSuccessLimit"},
		{"count below inconclusiveLimit", rolloutsapi.Metric{Name: "m", Provider: web(), Interval: "1m", Count: num(2), InconclusiveLimit: num(3)},
			"count", "count must be >= inconclusiveLimit"},
		{"both disabled", rolloutsapi.Metric{Name: "m", Provider: web(), FailureLimit: num(-1)},
			"failureLimit", "failureLimit and consecutiveSuccessLimit cannot both be disabled"},
		{"failureLimit below -1", rolloutsapi.Metric{Name: "m", Provider: web(), FailureLimit: num(-2)},
			"failureLimit", "failureLimit must be >= 0, or -1 to be disabled"},
		{"negative success limit", rolloutsapi.Metric{Name: "m", Provider: web(), ConsecutiveSuccessLimit: num(-1)},
			"consecutiveSuccessLimit", "consecutiveSuccessLimit must be >= 0"},
		{"negative error limit", rolloutsapi.Metric{Name: "m", Provider: web(), ConsecutiveErrorLimit: num(-1)},
			"consecutiveErrorLimit", "consecutiveErrorLimit must be >= 0"},
		{"count without interval", rolloutsapi.Metric{Name: "m", Provider: web(), Count: num(2)},
			"interval", "interval must be specified when count > 1"},
		{"bad interval", rolloutsapi.Metric{Name: "m", Provider: web(), Interval: "soon"},
			"interval", `invalid interval string: time: invalid duration "soon"`},
		{"bad initial delay", rolloutsapi.Metric{Name: "m", Provider: web(), InitialDelay: "later"},
			"initialDelay", `invalid startDelay string: time: invalid duration "later"`},
		{"templated count is left for the run", rolloutsapi.Metric{Name: "m", Provider: web(), Count: str("{{args.n}}"), Interval: "{{args.i}}"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			field, msg := ValidateMetric(tc.metric)
			if field != tc.field || msg != tc.error {
				t.Errorf("got %q at %q, want %q at %q", msg, field, tc.error, tc.field)
			}
		})
	}
}

func TestValidateTemplateSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec rolloutsapi.AnalysisTemplateSpec
		want []string // "field: detail"
	}{
		{"valid", rolloutsapi.AnalysisTemplateSpec{Metrics: []rolloutsapi.Metric{{Name: "m", Provider: web()}}}, nil},
		{"no metrics", rolloutsapi.AnalysisTemplateSpec{}, []string{"spec.metrics: Required value: no metrics specified"}},
		{"only templates", rolloutsapi.AnalysisTemplateSpec{Templates: []rolloutsapi.AnalysisTemplateRef{{TemplateName: "t"}}}, nil},
		{"duplicate names", rolloutsapi.AnalysisTemplateSpec{Metrics: []rolloutsapi.Metric{{Name: "m", Provider: web()}, {Name: "m", Provider: web()}}},
			[]string{`spec.metrics[1].name: Invalid value: "m": metrics[1]: duplicate name 'm'`}},
		{"each metric's first problem", rolloutsapi.AnalysisTemplateSpec{Metrics: []rolloutsapi.Metric{{Name: "a"}, {Name: "b", Provider: web(), Interval: "x", Count: num(-5)}}},
			[]string{"spec.metrics[0].provider: Invalid value: metrics[0]: no provider specified",
				`spec.metrics[1].interval: Invalid value: metrics[1]: invalid interval string: time: invalid duration "x"`}},
		{"an arg's default is used", rolloutsapi.AnalysisTemplateSpec{
			Args:    []rolloutsapi.Argument{{Name: "n", Value: ptr("3")}},
			Metrics: []rolloutsapi.Metric{{Name: "m", Provider: web(), Count: str("{{ args.n }}")}}},
			[]string{"spec.metrics[0].interval: Invalid value: metrics[0]: interval must be specified when count > 1"}},
		{"value and valueFrom", rolloutsapi.AnalysisTemplateSpec{
			Args:    []rolloutsapi.Argument{{Name: "k", Value: ptr("v"), ValueFrom: &rolloutsapi.ValueFrom{SecretKeyRef: &rolloutsapi.SecretKeyRef{Name: "s", Key: "k"}}}},
			Metrics: []rolloutsapi.Metric{{Name: "m", Provider: web()}}},
			[]string{"spec.args[0]: Invalid value: arg 'k' has both Value and ValueFrom fields"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range ValidateTemplateSpec(&tc.spec) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestValidateRunSpec(t *testing.T) {
	metrics := []rolloutsapi.Metric{{Name: "success-rate", Provider: rolloutsapi.MetricProvider{
		Web: &rolloutsapi.WebMetric{URL: "http://{{args.host}}/rate"}}}}
	for _, tc := range []struct {
		name string
		spec rolloutsapi.AnalysisRunSpec
		want string
	}{
		{"valid", rolloutsapi.AnalysisRunSpec{Metrics: metrics, Args: []rolloutsapi.Argument{{Name: "host", Value: ptr("svc")}}}, ""},
		{"a secret stands in", rolloutsapi.AnalysisRunSpec{Metrics: metrics, Args: []rolloutsapi.Argument{
			{Name: "host", ValueFrom: &rolloutsapi.ValueFrom{SecretKeyRef: &rolloutsapi.SecretKeyRef{Name: "s", Key: "k"}}}}}, ""},
		{"no value", rolloutsapi.AnalysisRunSpec{Metrics: metrics, Args: []rolloutsapi.Argument{{Name: "host"}}},
			`spec.args: Invalid value: Unable to resolve metric arguments: argument "host" was not supplied`},
		{"no such arg", rolloutsapi.AnalysisRunSpec{Metrics: metrics},
			"spec.args: Invalid value: Unable to resolve metric arguments: failed to resolve {{args.host}}"},
		{"dry-run rule matches nothing", rolloutsapi.AnalysisRunSpec{Metrics: metrics, Args: []rolloutsapi.Argument{{Name: "host", Value: ptr("svc")}},
			DryRun: []rolloutsapi.DryRun{{MetricName: "success.*"}, {MetricName: "latency"}}},
			`spec.dryRun[1].metricName: Invalid value: "latency": dryRun[1]: Rule didn't match any metric name(s)`},
		{"retention rule matches nothing", rolloutsapi.AnalysisRunSpec{Metrics: metrics, Args: []rolloutsapi.Argument{{Name: "host", Value: ptr("svc")}},
			MeasurementRetention: []rolloutsapi.MeasurementRetention{{MetricName: "^rate$", Limit: 5}}},
			`spec.measurementRetention[0].metricName: Invalid value: "^rate$": measurementRetention[0]: Rule didn't match any metric name(s)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range ValidateRunSpec(&tc.spec) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Values are escaped for the JSON they are put in (Rollouts'
// ResolveQuotedArgs), so a quote in a value cannot break the metric.
func TestResolveRunMetricsQuotes(t *testing.T) {
	ms, err := ResolveRunMetrics([]rolloutsapi.Metric{{Name: "m", SuccessCondition: "result == '{{args.v}}'"}},
		[]rolloutsapi.Argument{{Name: "v", Value: ptr(`say "hi"`)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ms[0].SuccessCondition; got != `result == 'say "hi"'` {
		t.Errorf("successCondition %q", got)
	}
}
