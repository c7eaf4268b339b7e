package rules

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// A measurement is in flight from Start until Finish (or a terminating
// pass of Step) gives it a finishedAt, as in Rollouts, where an
// asynchronous provider (a Job) records a Running measurement and the
// controller completes it later. A metric has at most one in flight: it
// is always its last measurement.

// Start records the measurement d as started at now: a Running
// measurement appended to the metric's result (created, Running, if the
// metric has none yet). It reports false, and changes nothing, when the
// run is terminal, the metric already assessed, a measurement of it
// already in flight, or d.Number is not the metric's next ordinal (a
// stale Due): so starting a Due twice records it once. Step has already
// started the Due of its Plan in Plan.Status.
func Start(st *rolloutsapi.AnalysisRunStatus, d Due, now time.Time) bool {
	if st.Phase.Completed() {
		return false
	}
	res := result(st, d.Metric)
	switch last := lastMeasurement(res); {
	case res != nil && res.Phase.Completed(),
		last != nil && last.FinishedAt == nil,
		d.Number != ordinal(res):
		return false
	}
	if res == nil {
		st.MetricResults = append(st.MetricResults, rolloutsapi.MetricResult{
			Name:   d.Metric,
			Phase:  rolloutsapi.AnalysisPhaseRunning,
			DryRun: d.DryRun,
		})
		res = &st.MetricResults[len(st.MetricResults)-1]
	}
	t := metav1.NewTime(now)
	res.Measurements = append(res.Measurements, rolloutsapi.Measurement{
		Phase:     rolloutsapi.AnalysisPhaseRunning,
		StartedAt: &t,
	})
	return true
}

// Finish reports the in-flight measurement d as m, as Rollouts' controller
// records what a provider returns: m replaces it (keeping its startedAt
// and metadata where m has none) and, if m's phase is terminal, gets
// finishedAt now unless it has one and is counted in the metric result:
//
//   - Successful: count, successful and consecutiveSuccess +1,
//     consecutiveError reset;
//   - Failed, Inconclusive: count and failed (inconclusive) +1,
//     consecutiveError and consecutiveSuccess reset;
//   - Error: error and consecutiveError +1, consecutiveSuccess reset
//     (count is not: an errored measurement is retried).
//
// With a phase not terminal (Running), m only updates the measurement,
// which stays in flight. The metric and run phases are Step's to assess:
// call it after. Finish reports false, and changes nothing, when the run
// is terminal or d is not the metric's measurement in flight (finished
// already, cancelled, or stale).
func Finish(st *rolloutsapi.AnalysisRunStatus, d Due, m rolloutsapi.Measurement, now time.Time) bool {
	if st.Phase.Completed() {
		return false
	}
	res := result(st, d.Metric)
	last := lastMeasurement(res)
	if last == nil || last.FinishedAt != nil || d.Number != ordinal(res) {
		return false
	}
	if m.StartedAt == nil {
		m.StartedAt = last.StartedAt
	}
	if m.Metadata == nil {
		m.Metadata = last.Metadata
	}
	record(res, m, now)
	return true
}

// InFlight lists the measurements started and not finished, one per
// metric at most, in the order of the metric results.
func InFlight(st *rolloutsapi.AnalysisRunStatus) []Due {
	var out []Due
	for i := range st.MetricResults {
		res := &st.MetricResults[i]
		if last := lastMeasurement(res); last != nil && last.FinishedAt == nil {
			out = append(out, Due{Metric: res.Name, Number: ordinal(res), DryRun: res.DryRun})
		}
	}
	return out
}

// stop ends the metric's in-flight measurement as Rollouts' provider
// would when the run is terminating, and says whether to cancel its work
// now. The job provider's Terminate ends it (terminate). The others'
// leave it as it is, uncounted: their measurements are taken whole within
// one reconcile in Rollouts, so it never has one in flight to count. The
// run ends in the same pass, which cancels that work (InFlight), and
// what it would have reported comes to an ended run (Finish).
func stop(m rolloutsapi.Metric, res *rolloutsapi.MetricResult, now time.Time) (Due, bool) {
	if m.Provider.Job != nil {
		return terminate(res, now), true
	}
	return Due{}, false
}

// terminate ends the metric's in-flight measurement as Rollouts does when
// the run is terminating (its job provider's Terminate, then the
// controller's message): Inconclusive, "Metric Terminated", counted.
func terminate(res *rolloutsapi.MetricResult, now time.Time) Due {
	d := Due{Metric: res.Name, Number: ordinal(res), DryRun: res.DryRun}
	m := res.Measurements[len(res.Measurements)-1]
	t := metav1.NewTime(now)
	m.FinishedAt = &t
	m.Phase = rolloutsapi.AnalysisPhaseInconclusive
	m.Message = "Metric Terminated"
	record(res, m, now)
	return d
}

// record replaces the last measurement with m and counts it if it is
// complete (runMeasurements).
func record(res *rolloutsapi.MetricResult, m rolloutsapi.Measurement, now time.Time) {
	if m.Phase.Completed() {
		if m.FinishedAt == nil {
			t := metav1.NewTime(now)
			m.FinishedAt = &t
		}
		switch m.Phase {
		case rolloutsapi.AnalysisPhaseSuccessful:
			res.Successful++
			res.Count++
			res.ConsecutiveError = 0
			res.ConsecutiveSuccess++
		case rolloutsapi.AnalysisPhaseFailed:
			res.Failed++
			res.Count++
			res.ConsecutiveError = 0
			res.ConsecutiveSuccess = 0
		case rolloutsapi.AnalysisPhaseInconclusive:
			res.Inconclusive++
			res.Count++
			res.ConsecutiveError = 0
			res.ConsecutiveSuccess = 0
		case rolloutsapi.AnalysisPhaseError:
			res.Error++
			res.ConsecutiveError++
			res.ConsecutiveSuccess = 0
		}
	}
	res.Measurements[len(res.Measurements)-1] = m
}

// trimMeasurements is garbageCollectMeasurements: each metric of the
// run keeps its last measurements, DefaultMeasurementHistoryLimit or its
// retention rule's limit (if > 0). The counters, and so the ordinals,
// are untouched.
func trimMeasurements(st *rolloutsapi.AnalysisRunStatus, metrics []rolloutsapi.Metric, retention map[string]rolloutsapi.MeasurementRetention) {
	known := map[string]bool{}
	for _, m := range metrics {
		known[m.Name] = true
	}
	for i := range st.MetricResults {
		res := &st.MetricResults[i]
		limit := DefaultMeasurementHistoryLimit
		if r, ok := retention[res.Name]; ok && r.Limit > 0 {
			limit = int(r.Limit)
		}
		if n := len(res.Measurements); n > limit && known[res.Name] {
			res.Measurements = append([]rolloutsapi.Measurement(nil), res.Measurements[n-limit:]...)
		}
	}
}

// ordinal is the Number of the metric's measurement in flight, or of the
// next one to start: every measurement started ends counted in count
// (Successful, Failed, Inconclusive) or error, never both.
func ordinal(res *rolloutsapi.MetricResult) int {
	if res == nil {
		return 1
	}
	return int(res.Count) + int(res.Error) + 1
}

// result is the metric's result in st, nil if it has none (GetResult,
// but a pointer into st).
func result(st *rolloutsapi.AnalysisRunStatus, metric string) *rolloutsapi.MetricResult {
	for i := range st.MetricResults {
		if st.MetricResults[i].Name == metric {
			return &st.MetricResults[i]
		}
	}
	return nil
}

// lastMeasurement is the metric's last measurement, started or finished
// (LastMeasurement); nil without one.
func lastMeasurement(res *rolloutsapi.MetricResult) *rolloutsapi.Measurement {
	if res == nil || len(res.Measurements) == 0 {
		return nil
	}
	return &res.Measurements[len(res.Measurements)-1]
}
