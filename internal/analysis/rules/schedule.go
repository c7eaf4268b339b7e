package rules

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// Rollouts' constants (analysis/analysis.go, utils/defaults).
const (
	// DefaultMeasurementHistoryLimit is how many measurements a metric
	// keeps when no measurementRetention rule (with a limit > 0) names it.
	DefaultMeasurementHistoryLimit = 10
	// DefaultErrorRetryInterval is how long after a measurement in Error
	// the next one is taken, whatever the metric's interval.
	DefaultErrorRetryInterval = 10 * time.Second
	// DefaultConsecutiveErrorLimit is a metric's consecutiveErrorLimit
	// when it has none.
	DefaultConsecutiveErrorLimit = 4
)

// Immediately is the Plan.Next of a run to look at again at once: the
// smallest wait, so that 0 keeps meaning "nothing pending".
const Immediately = time.Nanosecond

// Plan is one pass of Rollouts' analysis controller (reconcileAnalysisRun)
// over a run at now: what to write, what to measure, and when to look
// again.
type Plan struct {
	// Status is the run's status after the pass, to be written as is:
	// phase, message, startedAt, completedAt, metricResults (their phases,
	// messages and counters, each Due already recorded as a Running
	// measurement, each Cancel as finished, the history trimmed to its
	// limit), runSummary and dryRunSummary.
	Status rolloutsapi.AnalysisRunStatus
	// Due are the measurements to start now, at most one per metric, in
	// the order of the metrics. None while the run is terminal or
	// terminating.
	Due []Due
	// Cancel are in-flight measurements the run no longer wants, whose
	// work is to be stopped: those this pass terminated (the run is
	// terminating: Status has them Inconclusive, "Metric Terminated", as
	// Rollouts' job provider ends a job), and, once the run is terminal,
	// any measurement still in flight.
	Cancel []Due
	// Next is when to look at the run again if nothing else happens
	// (no measurement reported): the earliest end of an initialDelay, of
	// an interval or of an error retry, or a future resumeAt of an
	// in-flight measurement; Immediately when the run became terminating
	// in this pass and the next pass ends it. 0 means nothing is pending
	// on the clock: the run is terminal, or it waits only for the
	// measurements in flight to be reported (Finish, then Step again).
	Next time.Duration
}

// Due names one measurement of a metric.
type Due struct {
	// Metric is the metric's name.
	Metric string
	// Number is the measurement's 1-based ordinal among all the
	// measurements ever started for the metric: the metric result's
	// count + error + 1 when it is started (every measurement started
	// ends counted in exactly one of them), so it survives restarts and
	// the trimming of old measurements, and a name built from it is
	// stable.
	Number int
	// DryRun is whether the metric runs in dry-run mode (its result is
	// recorded but does not decide the run).
	DryRun bool
}

// Step is one pass of Rollouts' analysis controller over run at now,
// deciding only: the caller takes the measurements Due and reports each
// with Finish. The run is not modified.
//
// metrics are the run's metrics with its args resolved, in the order of
// its spec; nil means Step resolves them itself as Rollouts decides,
// with a Secret's value left as a placeholder (ResolveRunMetrics), and a
// failure ends the run in Error, "Unable to resolve metric arguments:
// ...".
//
// As in Rollouts:
//   - a terminal run (Successful, Failed, Error, Inconclusive) is left
//     unchanged;
//   - an invalid spec (ValidateRunSpec's rules) ends the run in Error,
//     "Analysis spec invalid: <the first problem>", with no startedAt or
//     completedAt;
//   - the first pass sets startedAt and the phase Running;
//   - a metric is measured first in the first pass, or, with an
//     initialDelay, once that has passed since startedAt (never in the
//     pass that sets startedAt, even with "0s"), then again once
//     its interval has passed since the last measurement finished (10s
//     after one in Error), until its count is reached: count defaults to
//     1 without an interval and to unlimited with one;
//   - a metric is assessed after each measurement: Failed when failed >
//     failureLimit (default 0, -1 disables it), Inconclusive when
//     inconclusive > inconclusiveLimit (default 0), Error when
//     consecutiveError > consecutiveErrorLimit (default 4), Successful
//     when consecutiveSuccessLimit (if > 0) is reached, or once count is
//     reached (Inconclusive or Failed instead if consecutiveSuccessLimit
//     was not reached);
//   - the run is Running until every metric is assessed, then takes the
//     worst of them (Failed, Error, Inconclusive, Successful), with the
//     message `Metric "x" assessed Failed due to failed (1) >
//     failureLimit (0)`; dry-run metrics never decide the run and are
//     counted in dryRunSummary;
//   - a metric assessed Failed, Error or Inconclusive (not in dry-run)
//     makes the run terminating, as spec.terminate does: the next pass
//     (Next is Immediately) starts no more measurements, cancels those in
//     flight, and ends the run, with the worst metric's phase and message;
//     with spec.terminate and no metric decided worse, Successful "Run
//     Terminated";
//   - each metric keeps its last 10 measurements, or its
//     measurementRetention limit.
func Step(run *rolloutsapi.AnalysisRun, metrics []rolloutsapi.Metric, now time.Time) Plan {
	st := *run.Status.DeepCopy()
	if st.Phase.Completed() {
		return Plan{Status: st, Cancel: InFlight(&st)}
	}
	if st.MetricResults == nil {
		st.MetricResults = []rolloutsapi.MetricResult{}
	}
	if metrics == nil {
		resolved, err := ResolveRunMetrics(run.Spec.Metrics, run.Spec.Args)
		if err != nil {
			return refused(st, "Unable to resolve metric arguments: "+err.Error())
		}
		metrics = resolved
	}
	spec, problem := checkRunSpec(&run.Spec, metrics)
	if problem != "" {
		return refused(st, "Analysis spec invalid: "+problem)
	}

	var plan Plan
	terminating := isTerminating(run.Spec.Terminate, &st)
	for _, m := range metrics {
		res := result(&st, m.Name)
		if res != nil && res.Phase.Completed() {
			continue
		}
		last := lastMeasurement(res)
		if last != nil && last.FinishedAt == nil {
			// In flight: its report comes through Finish. Terminating,
			// Rollouts' provider terminates it (stop).
			if terminating {
				if d, cancel := stop(m, res, now); cancel {
					plan.Cancel = append(plan.Cancel, d)
				}
			}
			continue
		}
		if terminating || !due(m, res, last, st.StartedAt, now) {
			continue
		}
		d := Due{Metric: m.Name, Number: ordinal(res), DryRun: spec.dryRun[m.Name]}
		Start(&st, d, now)
		plan.Due = append(plan.Due, d)
	}

	phase, message := assessRun(run.Spec.Terminate, terminating, metrics, spec.dryRun, &st, now)
	if phase != st.Phase {
		st.Phase, st.Message = phase, message
		if phase.Completed() && st.CompletedAt == nil {
			t := metav1.NewTime(now)
			st.CompletedAt = &t
		}
	}
	trimMeasurements(&st, metrics, spec.retention)

	plan.Status = st
	if st.Phase.Completed() {
		plan.Cancel = append(plan.Cancel, InFlight(&st)...)
		return plan
	}
	if isTerminating(run.Spec.Terminate, &st) {
		return plan.withNext(Immediately)
	}
	return plan.withNext(nextLook(&st, metrics, now))
}

func (p Plan) withNext(d time.Duration) Plan {
	p.Next = d
	return p
}

// refused is the pass of a run Rollouts cannot measure: Error with the
// message, nothing else written (no startedAt, no completedAt).
func refused(st rolloutsapi.AnalysisRunStatus, message string) Plan {
	st.Phase = rolloutsapi.AnalysisPhaseError
	st.Message = message
	return Plan{Status: st, Cancel: InFlight(&st)}
}

// due is generateMetricTasks' decision for a metric with no measurement
// in flight: is one to be started at now?
func due(m rolloutsapi.Metric, res *rolloutsapi.MetricResult, last *rolloutsapi.Measurement, startedAt *metav1.Time, now time.Time) bool {
	if last == nil {
		if m.InitialDelay == "" {
			return true
		}
		if startedAt == nil {
			return false
		}
		delay, err := m.InitialDelay.Duration()
		return err == nil && !startedAt.Add(delay).After(now)
	}
	if countReached(m, res) {
		return false
	}
	// Without an interval, count is 1: a measurement is due again only
	// after an Error, 10s later.
	interval := DefaultErrorRetryInterval
	if last.Phase != rolloutsapi.AnalysisPhaseError && m.Interval != "" {
		d, err := m.Interval.Duration()
		if err != nil {
			return false
		}
		interval = d
	}
	return now.After(last.FinishedAt.Add(interval))
}

// retryInterval is how long after last the next measurement is taken:
// 10s after an Error, else the metric's interval; false without one.
func retryInterval(m rolloutsapi.Metric, last *rolloutsapi.Measurement) (time.Duration, bool) {
	if last.Phase == rolloutsapi.AnalysisPhaseError {
		return DefaultErrorRetryInterval, true
	}
	if m.Interval == "" {
		return 0, false
	}
	d, err := m.Interval.Duration()
	return d, err == nil
}

// countReached reports whether the metric has taken its effective count
// of measurements (errors not counted); never without a count but with
// an interval.
func countReached(m rolloutsapi.Metric, res *rolloutsapi.MetricResult) bool {
	count := m.EffectiveCount()
	return count != nil && res != nil && res.Count >= int32(count.IntValue())
}

// nextLook is calculateNextReconcileTime, as a wait from now. An
// in-flight measurement's resumeAt counts only while in the future: its
// result comes through Finish, not by polling it.
func nextLook(st *rolloutsapi.AnalysisRunStatus, metrics []rolloutsapi.Metric, now time.Time) time.Duration {
	var at *time.Time
	earliest := func(t time.Time) {
		if at == nil || at.After(t) {
			at = &t
		}
	}
	for _, m := range metrics {
		res := result(st, m.Name)
		if res != nil && res.Phase.Completed() {
			continue
		}
		last := lastMeasurement(res)
		switch {
		case last == nil:
			if m.InitialDelay == "" {
				continue
			}
			start := now
			if st.StartedAt != nil {
				start = st.StartedAt.Time
			}
			if delay, err := m.InitialDelay.Duration(); err == nil {
				earliest(start.Add(delay))
			}
		case last.FinishedAt == nil:
			if last.ResumeAt != nil && last.ResumeAt.After(now) {
				earliest(last.ResumeAt.Time)
			}
		case countReached(m, res):
		default:
			if interval, ok := retryInterval(m, last); ok {
				earliest(last.FinishedAt.Add(interval))
			}
		}
	}
	if at == nil {
		return 0
	}
	return max(at.Sub(now), Immediately)
}
