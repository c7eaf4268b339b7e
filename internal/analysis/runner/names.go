package runner

import (
	"fmt"
	"regexp"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/analysis/rules"
	"taskactions/internal/taskactions"
)

// An AnalysisRun's run: project = the AnalysisRun's namespace, domain
// "analysis", run name = the ULID in a name <stage>.<ULID>.<collection>
// (as Kargo names them), lower-cased, else "a" and 25 hex digits of the
// name's sha256; the root action is "analysis", and measurement n of a
// metric its child "<metric>-<n>" (the metric's name made a DNS label,
// or "metric<i>" when it cannot be one).
const (
	Domain       = "analysis"
	RootAction   = "analysis"
	RootTaskType = "argo-analysis" // no plugin claims it: the runner reports its status
)

// RunOf is the run of an AnalysisRun.
func RunOf(ar *rolloutsapi.AnalysisRun) v1.RunID {
	return v1.RunID{Project: ar.Namespace, Domain: Domain, Run: runName(ar.Name)}
}

func runName(name string) string { return v1.RunNameOf(name, "a") }

func rootID(ar *rolloutsapi.AnalysisRun) taskactions.ActionID {
	r := RunOf(ar)
	return taskactions.ActionID{Project: r.Project, Domain: r.Domain, Run: r.Run, Name: RootAction}
}

// measurementID is the action of measurement d of ar.
func measurementID(ar *rolloutsapi.AnalysisRun, d rules.Due) taskactions.ActionID {
	id := rootID(ar)
	id.Name = fmt.Sprintf("%s-%d", metricLabel(ar, d.Metric), d.Number)
	return id
}

var label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// metricLabel is a metric's name as the first part of an action name.
func metricLabel(ar *rolloutsapi.AnalysisRun, metric string) string {
	if label.MatchString(metric) && len(metric) <= 50 {
		return metric
	}
	for i, m := range ar.Spec.Metrics {
		if m.Name == metric {
			return fmt.Sprintf("metric%d", i)
		}
	}
	return "metric"
}
