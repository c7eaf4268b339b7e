package rules

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// Rollouts has no admission webhook for its analysis kinds: the CRD's
// schema is checked by the API server, and the rest by the analysis
// controller when a run starts, which ends the run in Error with
// "Analysis spec invalid: <message>". Here the same checks, with the same
// messages, refuse a template or a run when it is written, so that a
// mistake is seen at once rather than at the first verification.

// ValidateTemplateSpec is what Rollouts would refuse in a template's
// metrics once a run of it starts (ValidateMetrics), and its args'
// rule. A template may leave a metric's counts and durations to its args
// ({{args.count}}); those are checked only when known, at run time, as
// in Rollouts. So are the dry-run and retention rules, which may name
// metrics of the templates this one is combined with.
func ValidateTemplateSpec(spec *rolloutsapi.AnalysisTemplateSpec) field.ErrorList {
	f := field.NewPath("spec")
	var errs field.ErrorList
	for i, a := range spec.Args {
		if a.Value != nil && a.ValueFrom != nil {
			// Rollouts' validateAnalysisMetrics, for a Rollout's templates.
			errs = append(errs, field.Invalid(f.Child("args").Index(i), field.OmitValueType{},
				fmt.Sprintf("arg '%s' has both Value and ValueFrom fields", a.Name)))
		}
	}
	if len(spec.Metrics) == 0 && len(spec.Templates) > 0 {
		return errs // its metrics are the templates'
	}
	metrics := make([]rolloutsapi.Metric, len(spec.Metrics))
	for i, m := range spec.Metrics {
		metrics[i] = resolveDefaults(m, spec.Args)
	}
	return append(errs, validateMetrics(f.Child("metrics"), metrics)...)
}

// ValidateRunSpec is what Rollouts' analysis controller refuses when a
// run starts: arguments that do not resolve ("Unable to resolve metric
// arguments: ..."), invalid metrics, and dry-run and retention rules that
// match no metric.
func ValidateRunSpec(spec *rolloutsapi.AnalysisRunSpec) field.ErrorList {
	f := field.NewPath("spec")
	metrics, err := ResolveRunMetrics(spec.Metrics, spec.Args)
	if err != nil {
		return field.ErrorList{field.Invalid(f.Child("args"), field.OmitValueType{},
			"Unable to resolve metric arguments: "+err.Error())}
	}
	errs := validateMetrics(f.Child("metrics"), metrics)
	for i, d := range spec.DryRun {
		if !matchesAny(d.MetricName, metrics) {
			errs = append(errs, field.Invalid(f.Child("dryRun").Index(i).Child("metricName"), d.MetricName,
				fmt.Sprintf("dryRun[%d]: Rule didn't match any metric name(s)", i)))
		}
	}
	for i, r := range spec.MeasurementRetention {
		if !matchesAny(r.MetricName, metrics) {
			errs = append(errs, field.Invalid(f.Child("measurementRetention").Index(i).Child("metricName"), r.MetricName,
				fmt.Sprintf("measurementRetention[%d]: Rule didn't match any metric name(s)", i)))
		}
	}
	return errs
}

// matchesAny is Rollouts' rule matching (GetDryRunMetrics): the rule is a
// regular expression, unanchored; one that does not compile matches
// nothing.
func matchesAny(rule string, metrics []rolloutsapi.Metric) bool {
	for _, m := range metrics {
		if ok, _ := regexp.MatchString(rule, m.Name); ok {
			return true
		}
	}
	return false
}

// validateMetrics is Rollouts' ValidateMetrics, each message prefixed
// with the metric's index as Rollouts does. Rollouts stops at the first
// error; here each metric reports its first.
func validateMetrics(f *field.Path, metrics []rolloutsapi.Metric) field.ErrorList {
	if len(metrics) == 0 {
		return field.ErrorList{field.Required(f, "no metrics specified")}
	}
	var errs field.ErrorList
	names := map[string]bool{}
	for i, m := range metrics {
		if names[m.Name] {
			errs = append(errs, field.Invalid(f.Index(i).Child("name"), m.Name,
				fmt.Sprintf("metrics[%d]: duplicate name '%s'", i, m.Name)))
			continue
		}
		names[m.Name] = true
		if child, msg := ValidateMetric(m); msg != "" {
			errs = append(errs, field.Invalid(f.Index(i).Child(child), field.OmitValueType{},
				fmt.Sprintf("metrics[%d]: %s", i, msg)))
		}
	}
	return errs
}

// ValidateMetric is Rollouts' ValidateMetric: the first problem of a
// metric, as Rollouts words it, and the field it is about; "" when there
// is none. Counts and durations still holding an {{args.x}} tag are not
// checked: they are known only once a run resolves them.
func ValidateMetric(m rolloutsapi.Metric) (child, message string) {
	if resolved(m) {
		if child, message = validateLimits(m); message != "" {
			return child, message
		}
	}
	return validateProvider(m)
}

func validateLimits(m rolloutsapi.Metric) (string, string) {
	count, failureLimit := intValue(m.Count), intValue(m.FailureLimit)
	successLimit, inconclusiveLimit := intValue(m.ConsecutiveSuccessLimit), intValue(m.InconclusiveLimit)
	switch {
	case successLimit < 0:
		return "consecutiveSuccessLimit", "consecutiveSuccessLimit must be >= 0"
	case failureLimit < -1:
		return "failureLimit", "failureLimit must be >= 0, or -1 to be disabled"
	case successLimit == 0 && failureLimit == -1:
		return "failureLimit", "failureLimit and consecutiveSuccessLimit cannot both be disabled"
	case inconclusiveLimit < 0:
		return "inconclusiveLimit", "inconclusiveLimit must be >= 0"
	case m.ConsecutiveErrorLimit != nil && m.ConsecutiveErrorLimit.IntValue() < 0:
		return "consecutiveErrorLimit", "consecutiveErrorLimit must be >= 0"
	case count > 0 && failureLimit >= 0 && count < failureLimit+successLimit:
		return "count", fmt.Sprintf("count (%d) must be >= failureLimit + consecutiveSuccessLimit (%d + %d) if both >= 0", count, failureLimit, successLimit)
	case count > 0 && failureLimit < 0 && count < successLimit:
		return "count", "count must be >= consecutiveSuccessLimit"
	case count > 0 && count < inconclusiveLimit:
		return "count", "count must be >= inconclusiveLimit"
	case count > 1 && m.Interval == "":
		return "interval", "interval must be specified when count > 1"
	}
	if m.Interval != "" {
		if _, err := m.Interval.Duration(); err != nil {
			return "interval", fmt.Sprintf("invalid interval string: %v", err)
		}
	}
	if m.InitialDelay != "" {
		if _, err := m.InitialDelay.Duration(); err != nil {
			return "initialDelay", fmt.Sprintf("invalid startDelay string: %v", err)
		}
	}
	return "", ""
}

func validateProvider(m rolloutsapi.Metric) (string, string) {
	p := m.Provider
	n := len(p.Plugin)
	for _, set := range []bool{p.Prometheus != nil, p.Job != nil, p.Web != nil, p.Wavefront != nil,
		p.Kayenta != nil, p.Datadog != nil, p.NewRelic != nil, p.CloudWatch != nil, p.Graphite != nil,
		p.Influxdb != nil, p.SkyWalking != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return "provider", "no provider specified"
	case n > 1:
		return "provider", "multiple providers specified"
	}
	return "", ""
}

// intValue is a limit's value as Rollouts reads it: 0 when absent, and a
// string that is not a number is 0 too (IntOrString.IntValue).
func intValue(v *intstr.IntOrString) int {
	if v == nil {
		return 0
	}
	return v.IntValue()
}

// resolved reports whether a metric's counts and durations are all known
// (no {{...}} tag left in them).
func resolved(m rolloutsapi.Metric) bool {
	for _, v := range []*intstr.IntOrString{m.Count, m.FailureLimit, m.InconclusiveLimit, m.ConsecutiveErrorLimit, m.ConsecutiveSuccessLimit} {
		if v != nil && strings.Contains(v.StrVal, "{{") {
			return false
		}
	}
	return !strings.Contains(string(m.Interval), "{{") && !strings.Contains(string(m.InitialDelay), "{{")
}
