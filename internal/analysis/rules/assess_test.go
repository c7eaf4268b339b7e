package rules

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// at is t0 + d as an API time.
func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

// done is a measurement finished at t0 + d.
func done(phase rolloutsapi.AnalysisPhase, d time.Duration) rolloutsapi.Measurement {
	return rolloutsapi.Measurement{Phase: phase, StartedAt: at(d - time.Second), FinishedAt: at(d)}
}

// inFlight is a measurement started at t0 + d.
func inFlight(d time.Duration) rolloutsapi.Measurement {
	return rolloutsapi.Measurement{Phase: rolloutsapi.AnalysisPhaseRunning, StartedAt: at(d)}
}

// Rollouts' assessMetricStatus (analysis_test.go TestAssessMetricStatus*):
// a metric's phase from its counters, not terminating and terminating.
func TestAssessMetric(t *testing.T) {
	const (
		ok   = rolloutsapi.AnalysisPhaseSuccessful
		run  = rolloutsapi.AnalysisPhaseRunning
		pend = rolloutsapi.AnalysisPhasePending
		fail = rolloutsapi.AnalysisPhaseFailed
		inc  = rolloutsapi.AnalysisPhaseInconclusive
		erro = rolloutsapi.AnalysisPhaseError
	)
	last := []rolloutsapi.Measurement{done(ok, -time.Minute)}
	indefinite := rolloutsapi.Metric{Name: "m", Interval: "60s"}
	withLimits := func(m rolloutsapi.Metric, set func(*rolloutsapi.Metric)) rolloutsapi.Metric { set(&m); return m }
	successLimit := func(csl, fl int) rolloutsapi.Metric {
		return withLimits(indefinite, func(m *rolloutsapi.Metric) { m.ConsecutiveSuccessLimit, m.FailureLimit = num(csl), num(fl) })
	}
	counted := func(m rolloutsapi.Metric, count int) rolloutsapi.Metric {
		return withLimits(m, func(m *rolloutsapi.Metric) { m.Count = num(count) })
	}
	for _, tc := range []struct {
		name             string
		metric           rolloutsapi.Metric
		result           rolloutsapi.MetricResult
		want, terminated rolloutsapi.AnalysisPhase
	}{
		{"no measurement", indefinite, rolloutsapi.MetricResult{}, pend, ok},
		{"in flight", indefinite, rolloutsapi.MetricResult{Count: 1, Measurements: []rolloutsapi.Measurement{done(ok, -time.Minute), inFlight(0)}}, run, run},
		{"already assessed", indefinite, rolloutsapi.MetricResult{Phase: fail, Measurements: last}, fail, fail},
		{"failed > failureLimit", withLimits(indefinite, func(m *rolloutsapi.Metric) { m.FailureLimit = num(2) }),
			rolloutsapi.MetricResult{Failed: 3, Count: 3, Measurements: last}, fail, fail},
		{"failed = failureLimit", withLimits(indefinite, func(m *rolloutsapi.Metric) { m.FailureLimit = num(3) }),
			rolloutsapi.MetricResult{Failed: 3, Count: 3, Measurements: last}, run, ok},
		{"failureLimit defaults to 0", rolloutsapi.Metric{Name: "m"},
			rolloutsapi.MetricResult{Failed: 1, Count: 1, Measurements: last}, fail, fail},
		{"inconclusive > inconclusiveLimit", withLimits(indefinite, func(m *rolloutsapi.Metric) { m.InconclusiveLimit = num(2) }),
			rolloutsapi.MetricResult{Inconclusive: 3, Count: 3, Measurements: last}, inc, inc},
		{"inconclusive = inconclusiveLimit", withLimits(indefinite, func(m *rolloutsapi.Metric) { m.InconclusiveLimit = num(3) }),
			rolloutsapi.MetricResult{Inconclusive: 3, Count: 3, Measurements: last}, run, ok},
		{"consecutiveError > 4 (default)", indefinite, rolloutsapi.MetricResult{ConsecutiveError: 5, Measurements: last}, erro, erro},
		{"consecutiveError = 4 (default)", indefinite, rolloutsapi.MetricResult{ConsecutiveError: 4, Measurements: last}, run, ok},
		{"consecutiveErrorLimit 0", withLimits(indefinite, func(m *rolloutsapi.Metric) { m.ConsecutiveErrorLimit = num(0) }),
			rolloutsapi.MetricResult{ConsecutiveError: 1, Measurements: last}, erro, erro},
		{"count reached", counted(rolloutsapi.Metric{Name: "m"}, 10), rolloutsapi.MetricResult{Successful: 10, Count: 10, Measurements: last}, ok, ok},
		{"count reached, too inconclusive", counted(rolloutsapi.Metric{Name: "m"}, 10),
			rolloutsapi.MetricResult{Successful: 5, Inconclusive: 5, Count: 10, Measurements: last}, inc, inc},
		{"count is 1 without interval", rolloutsapi.Metric{Name: "m"}, rolloutsapi.MetricResult{Successful: 1, Count: 1, Measurements: last}, ok, ok},
		{"an error is not counted", rolloutsapi.Metric{Name: "m"}, rolloutsapi.MetricResult{Error: 1, ConsecutiveError: 1, Measurements: last}, run, ok},

		// consecutiveSuccessLimit, indefinite (TestAssessMetricStatusConsecutiveSuccessLimit)
		{"consecutiveSuccessLimit reached", successLimit(3, -1),
			rolloutsapi.MetricResult{Failed: 3, Successful: 4, ConsecutiveSuccess: 3, Count: 7, Measurements: last}, ok, ok},
		{"consecutiveSuccessLimit not reached", successLimit(5, -1),
			rolloutsapi.MetricResult{Failed: 3, Successful: 4, ConsecutiveSuccess: 3, Count: 7, Measurements: last}, run, ok},
		// with a count, reached
		{"count reached, consecutiveSuccessLimit not, failureLimit disabled", counted(successLimit(5, -1), 7),
			rolloutsapi.MetricResult{Failed: 3, Successful: 4, ConsecutiveSuccess: 3, Count: 7, Measurements: last}, fail, fail},
		{"count reached, consecutiveSuccessLimit not, failureLimit kept", counted(successLimit(4, 4), 10),
			rolloutsapi.MetricResult{Failed: 4, Successful: 6, ConsecutiveSuccess: 3, Count: 10, Measurements: last}, inc, inc},
		{"count reached, consecutiveSuccessLimit reached", counted(successLimit(4, 4), 10),
			rolloutsapi.MetricResult{Failed: 4, Successful: 6, ConsecutiveSuccess: 4, Count: 10, Measurements: last}, ok, ok},
		{"failureLimit exceeded wins over consecutiveSuccessLimit", counted(successLimit(4, 4), 10),
			rolloutsapi.MetricResult{Failed: 5, Successful: 5, ConsecutiveSuccess: 4, Count: 10, Measurements: last}, fail, fail},
		{"count not reached, consecutiveSuccessLimit not", counted(successLimit(4, 4), 10),
			rolloutsapi.MetricResult{Failed: 3, Successful: 5, ConsecutiveSuccess: 3, Count: 8, Measurements: last}, run, ok},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := assessMetric(tc.metric, tc.result, false); got != tc.want {
				t.Errorf("not terminating: %s, want %s", got, tc.want)
			}
			if got := assessMetric(tc.metric, tc.result, true); got != tc.terminated {
				t.Errorf("terminating: %s, want %s", got, tc.terminated)
			}
		})
	}
}

// Rollouts' assessMetricFailureInconclusiveOrError: the reason, the last
// limit exceeded winning.
func TestLimitsExceeded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		metric  rolloutsapi.Metric
		result  rolloutsapi.MetricResult
		phase   rolloutsapi.AnalysisPhase
		message string
	}{
		{"none", rolloutsapi.Metric{}, rolloutsapi.MetricResult{Successful: 3}, "", ""},
		{"failed", rolloutsapi.Metric{}, rolloutsapi.MetricResult{Failed: 1}, rolloutsapi.AnalysisPhaseFailed, "failed (1) > failureLimit (0)"},
		{"failureLimit -1 disables it", rolloutsapi.Metric{FailureLimit: num(-1)}, rolloutsapi.MetricResult{Failed: 7}, "", ""},
		{"inconclusive", rolloutsapi.Metric{InconclusiveLimit: num(1)}, rolloutsapi.MetricResult{Inconclusive: 2},
			rolloutsapi.AnalysisPhaseInconclusive, "inconclusive (2) > inconclusiveLimit (1)"},
		{"errors", rolloutsapi.Metric{}, rolloutsapi.MetricResult{ConsecutiveError: 5},
			rolloutsapi.AnalysisPhaseError, "consecutiveErrors (5) > consecutiveErrorLimit (4)"},
		{"inconclusive over failed", rolloutsapi.Metric{}, rolloutsapi.MetricResult{Failed: 1, Inconclusive: 1},
			rolloutsapi.AnalysisPhaseInconclusive, "inconclusive (1) > inconclusiveLimit (0)"},
		{"errors over both", rolloutsapi.Metric{ConsecutiveErrorLimit: num(1)}, rolloutsapi.MetricResult{Failed: 1, Inconclusive: 1, ConsecutiveError: 2},
			rolloutsapi.AnalysisPhaseError, "consecutiveErrors (2) > consecutiveErrorLimit (1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			phase, message := limitsExceeded(tc.metric, tc.result)
			if phase != tc.phase || message != tc.message {
				t.Errorf("got %q %q, want %q %q", phase, message, tc.phase, tc.message)
			}
		})
	}
}

// Rollouts' assessRunStatus (TestAssessRunStatus*): the run's phase and
// message from its metrics, and the summaries, on newTerminatingRun's
// metrics ("run-forever" and "failed-metric").
func TestAssessRun(t *testing.T) {
	metrics := []rolloutsapi.Metric{{Name: "run-forever"}, {Name: "failed-metric"}}
	failedResult := rolloutsapi.MetricResult{Name: "failed-metric", Count: 1, Failed: 1, Phase: rolloutsapi.AnalysisPhaseFailed,
		Measurements: []rolloutsapi.Measurement{done(rolloutsapi.AnalysisPhaseFailed, -time.Minute)}}
	forever := func(phase rolloutsapi.AnalysisPhase, failed int32) rolloutsapi.MetricResult {
		return rolloutsapi.MetricResult{Name: "run-forever", Phase: phase, Failed: failed, Measurements: []rolloutsapi.Measurement{inFlight(-time.Minute)}}
	}
	withMessage := failedResult
	withMessage.Message = "Provider Error"
	for _, tc := range []struct {
		name        string
		results     []rolloutsapi.MetricResult
		dryRun      bool
		terminate   bool
		terminating bool
		phase       rolloutsapi.AnalysisPhase
		message     string
		summary     rolloutsapi.RunSummary
		dry         rolloutsapi.RunSummary
	}{
		{"one still running", []rolloutsapi.MetricResult{forever(rolloutsapi.AnalysisPhaseRunning, 0), failedResult}, false, false, false,
			rolloutsapi.AnalysisPhaseRunning, "", rolloutsapi.RunSummary{Count: 2, Failed: 1}, rolloutsapi.RunSummary{}},
		{"the worst, with its reason", []rolloutsapi.MetricResult{forever(rolloutsapi.AnalysisPhaseSuccessful, 0), failedResult}, false, false, true,
			rolloutsapi.AnalysisPhaseFailed, `Metric "failed-metric" assessed Failed due to failed (1) > failureLimit (0)`,
			rolloutsapi.RunSummary{Count: 2, Successful: 1, Failed: 1}, rolloutsapi.RunSummary{}},
		{"dry-run: successful", []rolloutsapi.MetricResult{forever(rolloutsapi.AnalysisPhaseSuccessful, 0), failedResult}, true, false, false,
			rolloutsapi.AnalysisPhaseSuccessful, "", rolloutsapi.RunSummary{}, rolloutsapi.RunSummary{Count: 2, Successful: 1, Failed: 1}},
		{"the measurement's message", []rolloutsapi.MetricResult{forever(rolloutsapi.AnalysisPhaseSuccessful, 0), withMessage}, false, false, true,
			rolloutsapi.AnalysisPhaseFailed, `Metric "failed-metric" assessed Failed due to failed (1) > failureLimit (0): "Error Message: Provider Error"`,
			rolloutsapi.RunSummary{Count: 2, Successful: 1, Failed: 1}, rolloutsapi.RunSummary{}},
		{"the first of equally bad", []rolloutsapi.MetricResult{forever(rolloutsapi.AnalysisPhaseFailed, 1), failedResult}, false, false, true,
			rolloutsapi.AnalysisPhaseFailed, `Metric "run-forever" assessed Failed due to failed (1) > failureLimit (0)`,
			rolloutsapi.RunSummary{Count: 2, Failed: 2}, rolloutsapi.RunSummary{}},
		{"dry-run: equally bad", []rolloutsapi.MetricResult{forever(rolloutsapi.AnalysisPhaseFailed, 1), failedResult}, true, false, false,
			rolloutsapi.AnalysisPhaseSuccessful, "", rolloutsapi.RunSummary{}, rolloutsapi.RunSummary{Count: 2, Failed: 2}},
		{"terminated, nothing measured", nil, false, true, true,
			rolloutsapi.AnalysisPhaseSuccessful, "Run Terminated", rolloutsapi.RunSummary{Count: 2}, rolloutsapi.RunSummary{}},
		{"terminated, a metric decided worse", []rolloutsapi.MetricResult{forever(rolloutsapi.AnalysisPhaseSuccessful, 0), failedResult}, false, true, true,
			rolloutsapi.AnalysisPhaseFailed, `Metric "failed-metric" assessed Failed due to failed (1) > failureLimit (0)`,
			rolloutsapi.RunSummary{Count: 2, Successful: 1, Failed: 1}, rolloutsapi.RunSummary{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := rolloutsapi.AnalysisRunStatus{Phase: rolloutsapi.AnalysisPhaseRunning}
			for _, r := range tc.results {
				r.DryRun = tc.dryRun
				st.MetricResults = append(st.MetricResults, *r.DeepCopy())
			}
			dry := map[string]bool{"run-forever": tc.dryRun, "failed-metric": tc.dryRun}
			phase, message := assessRun(tc.terminate, tc.terminating, metrics, dry, &st, t0)
			if phase != tc.phase || message != tc.message {
				t.Errorf("got %s %q, want %s %q", phase, message, tc.phase, tc.message)
			}
			if st.RunSummary != tc.summary || st.DryRunSummary == nil || *st.DryRunSummary != tc.dry {
				t.Errorf("summaries %+v %+v, want %+v %+v", st.RunSummary, st.DryRunSummary, tc.summary, tc.dry)
			}
			if st.StartedAt == nil || !st.StartedAt.Time.Equal(t0) {
				t.Errorf("startedAt %v, want %v", st.StartedAt, t0)
			}
		})
	}
}

// A metric result's phase and message follow its last measurement; a
// dry-run metric's message says why it was assessed so.
func TestAssessRunUpdatesResults(t *testing.T) {
	metrics := []rolloutsapi.Metric{{Name: "sleep-infinity"}, {Name: "fail-after-30"}, {Name: "dry"}}
	failed := done(rolloutsapi.AnalysisPhaseFailed, -30*time.Second)
	failed.Message = "too slow"
	st := rolloutsapi.AnalysisRunStatus{Phase: rolloutsapi.AnalysisPhaseRunning, MetricResults: []rolloutsapi.MetricResult{
		{Name: "sleep-infinity", Phase: rolloutsapi.AnalysisPhaseRunning, Measurements: []rolloutsapi.Measurement{inFlight(-time.Minute)}},
		{Name: "fail-after-30", Phase: rolloutsapi.AnalysisPhaseRunning, Count: 1, Failed: 1, Measurements: []rolloutsapi.Measurement{failed}},
		{Name: "dry", DryRun: true, Phase: rolloutsapi.AnalysisPhaseRunning, Count: 1, Failed: 1, Measurements: []rolloutsapi.Measurement{failed}},
	}}
	phase, message := assessRun(false, false, metrics, map[string]bool{"dry": true}, &st, t0)
	if phase != rolloutsapi.AnalysisPhaseRunning || message != "" {
		t.Errorf("run %s %q, want Running", phase, message)
	}
	for i, want := range []struct {
		phase   rolloutsapi.AnalysisPhase
		message string
	}{
		{rolloutsapi.AnalysisPhaseRunning, ""},
		{rolloutsapi.AnalysisPhaseFailed, "too slow"},
		{rolloutsapi.AnalysisPhaseFailed, "Metric assessed Failed due to failed (1) > failureLimit (0)"},
	} {
		if r := st.MetricResults[i]; r.Phase != want.phase || r.Message != want.message {
			t.Errorf("%s: %s %q, want %s %q", r.Name, r.Phase, r.Message, want.phase, want.message)
		}
	}
}

// A metric assessed Failed because its count ended before its
// consecutiveSuccessLimit was reached exceeds no limit: the run fails
// with no reason, and the summary counts it Successful (Rollouts' quirk).
func TestAssessRunConsecutiveSuccessNotReached(t *testing.T) {
	metrics := []rolloutsapi.Metric{{Name: "m", Interval: "1m", Count: num(2), FailureLimit: num(-1), ConsecutiveSuccessLimit: num(2)}}
	st := rolloutsapi.AnalysisRunStatus{Phase: rolloutsapi.AnalysisPhaseRunning, MetricResults: []rolloutsapi.MetricResult{
		{Name: "m", Phase: rolloutsapi.AnalysisPhaseRunning, Count: 2, Failed: 1, Successful: 1, ConsecutiveSuccess: 1,
			Measurements: []rolloutsapi.Measurement{done(rolloutsapi.AnalysisPhaseSuccessful, -time.Second)}}}}
	phase, message := assessRun(false, false, metrics, map[string]bool{}, &st, t0)
	if phase != rolloutsapi.AnalysisPhaseFailed || message != "" {
		t.Errorf("got %s %q, want Failed without a message", phase, message)
	}
	if want := (rolloutsapi.RunSummary{Count: 1, Successful: 1}); st.RunSummary != want {
		t.Errorf("summary %+v, want %+v", st.RunSummary, want)
	}
}

func TestIsWorse(t *testing.T) {
	order := []rolloutsapi.AnalysisPhase{rolloutsapi.AnalysisPhaseSuccessful, rolloutsapi.AnalysisPhaseRunning,
		rolloutsapi.AnalysisPhasePending, rolloutsapi.AnalysisPhaseInconclusive, rolloutsapi.AnalysisPhaseError, rolloutsapi.AnalysisPhaseFailed}
	for i := range order {
		for j := range order {
			if got := isWorse(order[i], order[j]); got != (j > i) {
				t.Errorf("isWorse(%s, %s) = %v", order[i], order[j], got)
			}
		}
	}
}
