package rules

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// assessRun is Rollouts' assessRunStatus: it sets startedAt (if unset),
// each metric result's phase (and, when it changes, its message, from
// the last measurement; a dry-run metric's from its limits), the run and
// dry-run summaries, and returns the run's phase and message.
func assessRun(terminate, terminating bool, metrics []rolloutsapi.Metric, dryRun map[string]bool,
	st *rolloutsapi.AnalysisRunStatus, now time.Time) (rolloutsapi.AnalysisPhase, string) {
	var worst rolloutsapi.AnalysisPhase
	var worstMessage string
	everythingCompleted := true
	if st.StartedAt == nil {
		t := metav1.NewTime(now)
		st.StartedAt = &t
	}
	if terminate {
		worstMessage = "Run Terminated"
	}
	var runSummary, dryRunSummary rolloutsapi.RunSummary
	for _, m := range metrics {
		if dryRun[m.Name] {
			dryRunSummary.Count++
		} else {
			runSummary.Count++
		}
		res := result(st, m.Name)
		if res == nil {
			everythingCompleted = false // not started yet (an initialDelay)
			continue
		}
		status := assessMetric(m, *res, terminating)
		if res.Phase != status {
			if last := lastMeasurement(res); last != nil {
				res.Message = last.Message
			}
			res.Phase = status
		}
		if !status.Completed() {
			everythingCompleted = false
			continue
		}
		phase, message := limitsExceeded(m, *res)
		if !dryRun[m.Name] {
			if worst == "" || isWorse(worst, status) {
				worst = status
				if message != "" {
					worstMessage = fmt.Sprintf("Metric \"%s\" assessed %s due to %s", m.Name, status, message)
					if res.Message != "" {
						worstMessage += fmt.Sprintf(": \"Error Message: %s\"", res.Message)
					}
				}
			}
			tally(&runSummary, phase)
		} else {
			if worst == "" {
				worst = rolloutsapi.AnalysisPhaseSuccessful
			}
			if message != "" {
				res.Message = fmt.Sprintf("Metric assessed %s due to %s", status, message)
			}
			tally(&dryRunSummary, phase)
		}
	}
	worstMessage = strings.TrimSpace(worstMessage)
	st.RunSummary = runSummary
	st.DryRunSummary = &dryRunSummary
	if terminating {
		if worst == "" {
			// not a single measurement taken, and told to stop
			return rolloutsapi.AnalysisPhaseSuccessful, worstMessage
		}
		return worst, worstMessage
	}
	if !everythingCompleted || worst == "" {
		return rolloutsapi.AnalysisPhaseRunning, ""
	}
	return worst, worstMessage
}

// tally counts a completed metric in a summary by the limit it exceeded;
// one that exceeded none counts as Successful (even when it was assessed
// Failed or Inconclusive for a consecutiveSuccessLimit not reached, as in
// Rollouts).
func tally(s *rolloutsapi.RunSummary, phase rolloutsapi.AnalysisPhase) {
	switch phase {
	case rolloutsapi.AnalysisPhaseError:
		s.Error++
	case rolloutsapi.AnalysisPhaseFailed:
		s.Failed++
	case rolloutsapi.AnalysisPhaseInconclusive:
		s.Inconclusive++
	default:
		s.Successful++
	}
}

// assessMetric is Rollouts' assessMetricStatus: a metric's phase from
// its counters and last measurement, and whether the run is terminating.
func assessMetric(m rolloutsapi.Metric, res rolloutsapi.MetricResult, terminating bool) rolloutsapi.AnalysisPhase {
	if res.Phase.Completed() {
		return res.Phase
	}
	if len(res.Measurements) == 0 {
		if terminating {
			return rolloutsapi.AnalysisPhaseSuccessful
		}
		return rolloutsapi.AnalysisPhasePending
	}
	if !res.Measurements[len(res.Measurements)-1].Phase.Completed() {
		return rolloutsapi.AnalysisPhaseRunning // in flight
	}
	if phase, _ := limitsExceeded(m, res); phase != "" {
		return phase
	}
	successLimit := 0
	if m.ConsecutiveSuccessLimit != nil {
		successLimit = m.ConsecutiveSuccessLimit.IntValue()
	}
	if successLimit > 0 && res.ConsecutiveSuccess >= int32(successLimit) {
		return rolloutsapi.AnalysisPhaseSuccessful
	}
	if countReached(m, &res) {
		// failureLimit was not exceeded (above); it applies unless -1.
		failureApplicable := m.FailureLimit == nil || m.FailureLimit.IntValue() >= 0
		switch {
		case successLimit > 0 && failureApplicable:
			return rolloutsapi.AnalysisPhaseInconclusive
		case successLimit > 0:
			return rolloutsapi.AnalysisPhaseFailed
		}
		return rolloutsapi.AnalysisPhaseSuccessful
	}
	if terminating {
		return rolloutsapi.AnalysisPhaseSuccessful // a metric measured indefinitely, stopped
	}
	return rolloutsapi.AnalysisPhaseRunning
}

// limitsExceeded is Rollouts' assessMetricFailureInconclusiveOrError: the
// phase a metric's counters force, and why; the last of failureLimit,
// inconclusiveLimit and consecutiveErrorLimit exceeded wins.
func limitsExceeded(m rolloutsapi.Metric, res rolloutsapi.MetricResult) (rolloutsapi.AnalysisPhase, string) {
	var phase rolloutsapi.AnalysisPhase
	var message string
	failureLimit := int32(0)
	if m.FailureLimit != nil {
		failureLimit = int32(m.FailureLimit.IntValue())
	}
	if failureLimit >= 0 && res.Failed > failureLimit {
		phase = rolloutsapi.AnalysisPhaseFailed
		message = fmt.Sprintf("failed (%d) > failureLimit (%d)", res.Failed, failureLimit)
	}
	inconclusiveLimit := int32(0)
	if m.InconclusiveLimit != nil {
		inconclusiveLimit = int32(m.InconclusiveLimit.IntValue())
	}
	if res.Inconclusive > inconclusiveLimit {
		phase = rolloutsapi.AnalysisPhaseInconclusive
		message = fmt.Sprintf("inconclusive (%d) > inconclusiveLimit (%d)", res.Inconclusive, inconclusiveLimit)
	}
	errorLimit := int32(DefaultConsecutiveErrorLimit)
	if m.ConsecutiveErrorLimit != nil {
		errorLimit = int32(m.ConsecutiveErrorLimit.IntValue())
	}
	if res.ConsecutiveError > errorLimit {
		phase = rolloutsapi.AnalysisPhaseError
		message = fmt.Sprintf("consecutiveErrors (%d) > consecutiveErrorLimit (%d)", res.ConsecutiveError, errorLimit)
	}
	return phase, message
}

// isTerminating is Rollouts' IsTerminating: spec.terminate, or a metric
// not in dry-run already assessed Failed, Error or Inconclusive.
func isTerminating(terminate bool, st *rolloutsapi.AnalysisRunStatus) bool {
	if terminate {
		return true
	}
	for _, res := range st.MetricResults {
		if res.DryRun {
			continue
		}
		switch res.Phase {
		case rolloutsapi.AnalysisPhaseFailed, rolloutsapi.AnalysisPhaseError, rolloutsapi.AnalysisPhaseInconclusive:
			return true
		}
	}
	return false
}

// phaseOrder is Rollouts' analysisStatusOrder, best to worst.
var phaseOrder = []rolloutsapi.AnalysisPhase{
	rolloutsapi.AnalysisPhaseSuccessful,
	rolloutsapi.AnalysisPhaseRunning,
	rolloutsapi.AnalysisPhasePending,
	rolloutsapi.AnalysisPhaseInconclusive,
	rolloutsapi.AnalysisPhaseError,
	rolloutsapi.AnalysisPhaseFailed,
}

// isWorse is Rollouts' IsWorse (an unknown phase ranks as Successful).
func isWorse(current, next rolloutsapi.AnalysisPhase) bool {
	rank := func(p rolloutsapi.AnalysisPhase) int {
		for i, q := range phaseOrder {
			if p == q {
				return i
			}
		}
		return 0
	}
	return rank(next) > rank(current)
}
