package rules

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// runSpec is what a pass of Rollouts' analysis controller reads from a
// run's spec once its metrics are resolved: which metrics run in dry-run
// mode, and how many measurements each keeps.
type runSpec struct {
	dryRun    map[string]bool
	retention map[string]rolloutsapi.MeasurementRetention
}

// checkRunSpec is the controller's check of a run before it measures
// (ValidateMetrics, GetDryRunMetrics, GetMeasurementRetentionMetrics, in
// that order): the first problem, worded as Rollouts words it, or "".
func checkRunSpec(spec *rolloutsapi.AnalysisRunSpec, metrics []rolloutsapi.Metric) (runSpec, string) {
	if errs := validateMetrics(field.NewPath("spec", "metrics"), metrics); len(errs) > 0 {
		// validateMetrics reports in Rollouts' order, so its first error
		// is the one Rollouts stops at.
		return runSpec{}, errs[0].Detail
	}
	rs := runSpec{dryRun: map[string]bool{}, retention: map[string]rolloutsapi.MeasurementRetention{}}
	for i, rule := range spec.DryRun {
		names := matching(rule.MetricName, metrics)
		if len(names) == 0 {
			return rs, fmt.Sprintf("dryRun[%d]: Rule didn't match any metric name(s)", i)
		}
		for _, n := range names {
			rs.dryRun[n] = true
		}
	}
	for i, rule := range spec.MeasurementRetention {
		names := matching(rule.MetricName, metrics)
		if len(names) == 0 {
			return rs, fmt.Sprintf("measurementRetention[%d]: Rule didn't match any metric name(s)", i)
		}
		for _, n := range names {
			rs.retention[n] = rule // a later rule overrides an earlier one, as in Rollouts
		}
	}
	return rs, ""
}

// matching is the metrics a dry-run or retention rule names. The rule is
// an unanchored regular expression (regexp.MatchString); one that does
// not compile, such as a bare "*", matches nothing, as in Rollouts v1.10.2
// (".*" is the rule for every metric).
func matching(rule string, metrics []rolloutsapi.Metric) []string {
	var names []string
	for _, m := range metrics {
		if ok, _ := regexp.MatchString(rule, m.Name); ok {
			names = append(names, m.Name)
		}
	}
	return names
}
