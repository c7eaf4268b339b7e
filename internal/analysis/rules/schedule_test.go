package rules

import (
	"reflect"
	"strings"
	"testing"
	"time"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// metric is a valid metric (a web provider) shaped by set.
func metric(name string, set func(*rolloutsapi.Metric)) rolloutsapi.Metric {
	m := rolloutsapi.Metric{Name: name, Provider: web()}
	if set != nil {
		set(&m)
	}
	return m
}

// asJob makes a metric's provider a job, whose Terminate ends a
// measurement in flight (the others' leave it as it is).
func asJob(m *rolloutsapi.Metric) {
	m.Provider = rolloutsapi.MetricProvider{Job: &rolloutsapi.JobMetric{}}
}

func interval(d string) func(*rolloutsapi.Metric) {
	return func(m *rolloutsapi.Metric) { m.Interval = rolloutsapi.DurationString(d) }
}

// started is a run already past its first pass.
func started(spec rolloutsapi.AnalysisRunSpec, results ...rolloutsapi.MetricResult) *rolloutsapi.AnalysisRun {
	return &rolloutsapi.AnalysisRun{Spec: spec, Status: rolloutsapi.AnalysisRunStatus{
		Phase: rolloutsapi.AnalysisPhaseRunning, StartedAt: at(-time.Hour), MetricResults: results}}
}

func metrics(ms ...rolloutsapi.Metric) rolloutsapi.AnalysisRunSpec {
	return rolloutsapi.AnalysisRunSpec{Metrics: ms}
}

func measured(name string, count, errors int32, last rolloutsapi.Measurement) rolloutsapi.MetricResult {
	r := rolloutsapi.MetricResult{Name: name, Phase: rolloutsapi.AnalysisPhaseRunning, Count: count, Error: errors,
		Measurements: []rolloutsapi.Measurement{last}}
	switch last.Phase {
	case rolloutsapi.AnalysisPhaseSuccessful:
		r.Successful, r.ConsecutiveSuccess = count, count
	case rolloutsapi.AnalysisPhaseFailed:
		r.Failed = 1
	case rolloutsapi.AnalysisPhaseInconclusive:
		r.Inconclusive = 1
	case rolloutsapi.AnalysisPhaseError:
		r.ConsecutiveError = errors
	}
	return r
}

func withMessage(m rolloutsapi.Measurement, msg string) rolloutsapi.Measurement {
	m.Message = msg
	return m
}

// What one pass of Rollouts' controller does with a run: its phase and
// message, the measurements due or cancelled, and when to look again.
func TestStep(t *testing.T) {
	const (
		ok   = rolloutsapi.AnalysisPhaseSuccessful
		run  = rolloutsapi.AnalysisPhaseRunning
		fail = rolloutsapi.AnalysisPhaseFailed
		inc  = rolloutsapi.AnalysisPhaseInconclusive
		erro = rolloutsapi.AnalysisPhaseError
	)
	m := metric("m", nil)
	every := metric("m", interval("1m"))
	everyJob := metric("m", func(m *rolloutsapi.Metric) { interval("1m")(m); asJob(m) })
	delayed := metric("m", func(m *rolloutsapi.Metric) { m.InitialDelay = "30s" })
	terminated := func(spec rolloutsapi.AnalysisRunSpec) rolloutsapi.AnalysisRunSpec { spec.Terminate = true; return spec }
	for _, tc := range []struct {
		name    string
		run     *rolloutsapi.AnalysisRun
		now     time.Duration // after t0
		phase   rolloutsapi.AnalysisPhase
		message string
		due     []Due
		cancel  []Due
		next    time.Duration
	}{
		// starting
		{"first pass: Running, measured", &rolloutsapi.AnalysisRun{Spec: metrics(m)}, 0, run, "", []Due{{Metric: "m", Number: 1}}, nil, 0},
		{"first pass, Pending", &rolloutsapi.AnalysisRun{Spec: metrics(m), Status: rolloutsapi.AnalysisRunStatus{Phase: rolloutsapi.AnalysisPhasePending}},
			0, run, "", []Due{{Metric: "m", Number: 1}}, nil, 0},
		{"initialDelay: not in the pass that starts the run", &rolloutsapi.AnalysisRun{Spec: metrics(delayed)}, 0, run, "", nil, nil, 30 * time.Second},
		{"initialDelay not over", started(metrics(delayed)), -time.Hour + 10*time.Second, run, "", nil, nil, 20 * time.Second},
		{"initialDelay over", started(metrics(delayed)), -time.Hour + 30*time.Second, run, "", []Due{{Metric: "m", Number: 1}}, nil, 0},
		{"initialDelay 0s", &rolloutsapi.AnalysisRun{Spec: metrics(metric("m", func(m *rolloutsapi.Metric) { m.InitialDelay = "0s" }))},
			0, run, "", nil, nil, Immediately},

		// interval and count
		{"interval not over", started(metrics(every), measured("m", 1, 0, done(ok, -50*time.Second))), 0, run, "", nil, nil, 10 * time.Second},
		{"interval ends now: not yet", started(metrics(every), measured("m", 1, 0, done(ok, -time.Minute))), 0, run, "", nil, nil, Immediately},
		{"interval over", started(metrics(every), measured("m", 1, 0, done(ok, -61*time.Second))), 0, run, "", []Due{{Metric: "m", Number: 2}}, nil, 0},
		{"interval without count: indefinitely", started(metrics(every), measured("m", 50, 0, done(ok, -61*time.Second))),
			0, run, "", []Due{{Metric: "m", Number: 51}}, nil, 0},
		{"count 1 without interval", started(metrics(m), measured("m", 1, 0, done(ok, -time.Second))), 0, ok, "", nil, nil, 0},
		{"count reached", started(metrics(metric("m", func(m *rolloutsapi.Metric) { m.Interval, m.Count = "1m", num(3) })),
			measured("m", 3, 0, done(ok, -time.Second))), 0, ok, "", nil, nil, 0},
		{"count 0 with interval: indefinitely", started(metrics(metric("m", func(m *rolloutsapi.Metric) { m.Interval, m.Count = "1m", num(0) })),
			measured("m", 3, 0, done(ok, -2*time.Minute))), 0, run, "", []Due{{Metric: "m", Number: 4}}, nil, 0},
		{"in flight: wait for its report", started(metrics(every), measured("m", 1, 0, inFlight(-time.Second))), 0, run, "", nil, nil, 0},
		{"in flight with a resumeAt", started(metrics(every), measured("m", 1, 0, rolloutsapi.Measurement{
			Phase: run, StartedAt: at(-time.Second), ResumeAt: at(15 * time.Second)})), 0, run, "", nil, nil, 15 * time.Second},
		{"in flight with a past resumeAt", started(metrics(every), measured("m", 1, 0, rolloutsapi.Measurement{
			Phase: run, StartedAt: at(-time.Minute), ResumeAt: at(-time.Second)})), 0, run, "", nil, nil, 0},
		{"the earliest metric", started(metrics(every, metric("n", interval("30s"))),
			measured("m", 1, 0, done(ok, -10*time.Second)), measured("n", 1, 0, done(ok, -10*time.Second))), 0, run, "", nil, nil, 20 * time.Second},

		// errors
		{"an error is retried after 10s", started(metrics(m), measured("m", 0, 1, done(erro, -5*time.Second))), 0, run, "", nil, nil, 5 * time.Second},
		{"an error is retried, counted in the number", started(metrics(every), measured("m", 2, 1, done(erro, -11*time.Second))),
			0, run, "", []Due{{Metric: "m", Number: 4}}, nil, 0},
		{"consecutiveErrors > 4", started(metrics(m), measured("m", 0, 5, withMessage(done(erro, -time.Second), "connection refused"))), 0,
			erro, `Metric "m" assessed Error due to consecutiveErrors (5) > consecutiveErrorLimit (4): "Error Message: connection refused"`, nil, nil, 0},
		{"consecutiveErrorLimit", started(metrics(metric("m", func(m *rolloutsapi.Metric) { m.ConsecutiveErrorLimit = num(1) })),
			measured("m", 0, 2, done(erro, -time.Second))), 0,
			erro, `Metric "m" assessed Error due to consecutiveErrors (2) > consecutiveErrorLimit (1)`, nil, nil, 0},

		// failures
		{"failed > failureLimit (0)", started(metrics(m), measured("m", 1, 0, done(fail, -time.Second))), 0,
			fail, `Metric "m" assessed Failed due to failed (1) > failureLimit (0)`, nil, nil, 0},
		{"failed, with the measurement's message", started(metrics(m), measured("m", 1, 0, withMessage(done(fail, -time.Second), "p99 900ms"))), 0,
			fail, `Metric "m" assessed Failed due to failed (1) > failureLimit (0): "Error Message: p99 900ms"`, nil, nil, 0},
		{"failures within failureLimit", started(metrics(metric("m", func(m *rolloutsapi.Metric) { m.Interval, m.FailureLimit = "1m", num(1) })),
			measured("m", 1, 0, done(fail, -2*time.Minute))), 0, run, "", []Due{{Metric: "m", Number: 2}}, nil, 0},
		{"inconclusive > inconclusiveLimit (0)", started(metrics(m), measured("m", 1, 0, done(inc, -time.Second))), 0,
			inc, `Metric "m" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0)`, nil, nil, 0},
		{"a failed metric ends the run once its sibling is done", started(metrics(metric("a", nil), m),
			measured("a", 1, 0, done(ok, -time.Second)), measured("m", 1, 0, done(fail, -time.Second))), 0,
			fail, `Metric "m" assessed Failed due to failed (1) > failureLimit (0)`, nil, nil, 0},

		// termination
		{"terminated before measuring", started(terminated(metrics(metric("m", func(m *rolloutsapi.Metric) { m.InitialDelay, m.Interval = "2h", "20s" })))),
			0, ok, "Run Terminated", nil, nil, 0},
		{"terminated after successes", started(terminated(metrics(every)), measured("m", 2, 0, done(ok, -2*time.Minute))),
			0, ok, "Run Terminated", nil, nil, 0},
		{"terminated while a job measures", started(terminated(metrics(everyJob)), measured("m", 2, 0, inFlight(-time.Second))), 0,
			inc, `Metric "m" assessed Inconclusive due to inconclusive (1) > inconclusiveLimit (0): "Error Message: Metric Terminated"`,
			nil, []Due{{Metric: "m", Number: 3}}, 0},
		{"terminated while a web measurement is in flight: left uncounted", started(terminated(metrics(every)),
			measured("m", 2, 0, inFlight(-time.Second))), 0, ok, "Run Terminated", nil, []Due{{Metric: "m", Number: 3}}, 0},
		{"terminated after a failure", started(terminated(metrics(m)), measured("m", 1, 0, done(fail, -time.Second))), 0,
			fail, `Metric "m" assessed Failed due to failed (1) > failureLimit (0)`, nil, nil, 0},

		// dry-run
		{"a dry-run failure does not fail the run", started(rolloutsapi.AnalysisRunSpec{Metrics: []rolloutsapi.Metric{metric("a", nil), m},
			DryRun: []rolloutsapi.DryRun{{MetricName: "^m$"}}}, measured("a", 1, 0, done(ok, -time.Second)), measured("m", 1, 0, done(fail, -time.Second))),
			0, ok, "", nil, nil, 0},
		{"dry-run metrics measured as dry-run", &rolloutsapi.AnalysisRun{Spec: rolloutsapi.AnalysisRunSpec{Metrics: []rolloutsapi.Metric{m, metric("n", nil)},
			DryRun: []rolloutsapi.DryRun{{MetricName: ".*"}}}}, 0, run, "",
			[]Due{{Metric: "m", Number: 1, DryRun: true}, {Metric: "n", Number: 1, DryRun: true}}, nil, 0},

		// refused
		{"invalid metric", &rolloutsapi.AnalysisRun{Spec: metrics(rolloutsapi.Metric{Name: "m"})}, 0,
			erro, "Analysis spec invalid: metrics[0]: no provider specified", nil, nil, 0},
		{"the first invalid metric", &rolloutsapi.AnalysisRun{Spec: metrics(m, metric("n", func(m *rolloutsapi.Metric) { m.Count = num(3) }), m)}, 0,
			erro, "Analysis spec invalid: metrics[1]: interval must be specified when count > 1", nil, nil, 0},
		{"no metrics", &rolloutsapi.AnalysisRun{}, 0, erro, "Analysis spec invalid: no metrics specified", nil, nil, 0},
		{"a bare * is not a wildcard", &rolloutsapi.AnalysisRun{Spec: rolloutsapi.AnalysisRunSpec{Metrics: []rolloutsapi.Metric{m},
			DryRun: []rolloutsapi.DryRun{{MetricName: "*"}}}}, 0, erro, "Analysis spec invalid: dryRun[0]: Rule didn't match any metric name(s)", nil, nil, 0},
		{"a retention rule matching nothing", &rolloutsapi.AnalysisRun{Spec: rolloutsapi.AnalysisRunSpec{Metrics: []rolloutsapi.Metric{m},
			MeasurementRetention: []rolloutsapi.MeasurementRetention{{MetricName: "m"}, {MetricName: "x", Limit: 3}}}}, 0,
			erro, "Analysis spec invalid: measurementRetention[1]: Rule didn't match any metric name(s)", nil, nil, 0},
		{"an argument without a value", &rolloutsapi.AnalysisRun{Spec: rolloutsapi.AnalysisRunSpec{
			Metrics: []rolloutsapi.Metric{metric("m", func(m *rolloutsapi.Metric) { m.Provider.Web.URL = "http://{{args.host}}/" })}}}, 0,
			erro, "Unable to resolve metric arguments: failed to resolve {{args.host}}", nil, nil, 0},
		{"invalid mid-run: in-flight measurements cancelled", started(metrics(m, m), measured("m", 0, 0, inFlight(-time.Second))), 0,
			erro, "Analysis spec invalid: metrics[1]: duplicate name 'm'", nil, []Due{{Metric: "m", Number: 1}}, 0},

		{"a result no metric names is left in flight, then cancelled", started(metrics(m), measured("m", 1, 0, done(ok, -time.Second)),
			measured("old", 2, 0, inFlight(-time.Minute))), 0, ok, "", nil, []Due{{Metric: "old", Number: 3}}, 0},

		// terminal
		{"a terminal run is left as it is", &rolloutsapi.AnalysisRun{Spec: metrics(every), Status: rolloutsapi.AnalysisRunStatus{
			Phase: fail, Message: "earlier", MetricResults: []rolloutsapi.MetricResult{measured("m", 1, 0, done(fail, -time.Hour))}}}, 0,
			fail, "earlier", nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.run.DeepCopy()
			p := Step(tc.run, nil, t0.Add(tc.now))
			if p.Status.Phase != tc.phase || p.Status.Message != tc.message {
				t.Errorf("run %s %q, want %s %q", p.Status.Phase, p.Status.Message, tc.phase, tc.message)
			}
			if !reflect.DeepEqual(p.Due, tc.due) {
				t.Errorf("due %+v, want %+v", p.Due, tc.due)
			}
			if !reflect.DeepEqual(p.Cancel, tc.cancel) {
				t.Errorf("cancel %+v, want %+v", p.Cancel, tc.cancel)
			}
			if p.Next != tc.next {
				t.Errorf("next %v, want %v", p.Next, tc.next)
			}
			if !reflect.DeepEqual(tc.run, before) {
				t.Error("the run was modified")
			}
			for _, d := range p.Due { // each recorded as started, now
				last := lastMeasurement(result(&p.Status, d.Metric))
				if last == nil || last.Phase != run || last.FinishedAt != nil || !last.StartedAt.Time.Equal(t0.Add(tc.now)) {
					t.Errorf("%s not started: %+v", d.Metric, last)
				}
			}
			completed := p.Status.CompletedAt != nil
			switch {
			case tc.phase.Completed() && tc.message == "earlier": // left as it was
			case strings.HasPrefix(tc.message, "Analysis spec invalid: "), strings.HasPrefix(tc.message, "Unable to resolve"):
				// refused: Rollouts writes neither startedAt nor completedAt
				if completed || (p.Status.StartedAt == nil) != (before.Status.StartedAt == nil) {
					t.Errorf("times written on a refused run: %v %v", p.Status.StartedAt, p.Status.CompletedAt)
				}
			case completed != tc.phase.Completed():
				t.Errorf("completedAt %v for %s", p.Status.CompletedAt, tc.phase)
			case completed && !p.Status.CompletedAt.Time.Equal(t0.Add(tc.now)):
				t.Errorf("completedAt %v, want now", p.Status.CompletedAt)
			}
		})
	}
}

// The first pass writes startedAt, the metric result, the summaries.
func TestStepFirstPassStatus(t *testing.T) {
	r := &rolloutsapi.AnalysisRun{Spec: rolloutsapi.AnalysisRunSpec{
		Metrics: []rolloutsapi.Metric{metric("a", nil), metric("b", func(m *rolloutsapi.Metric) { m.InitialDelay = "1m" })},
		DryRun:  []rolloutsapi.DryRun{{MetricName: "a"}}}}
	p := Step(r, nil, t0)
	zero := rolloutsapi.RunSummary{}
	want := rolloutsapi.AnalysisRunStatus{
		Phase:     rolloutsapi.AnalysisPhaseRunning,
		StartedAt: at(0),
		MetricResults: []rolloutsapi.MetricResult{{Name: "a", Phase: rolloutsapi.AnalysisPhaseRunning, DryRun: true,
			Measurements: []rolloutsapi.Measurement{inFlight(0)}}},
		RunSummary:    rolloutsapi.RunSummary{Count: 1},
		DryRunSummary: &rolloutsapi.RunSummary{Count: 1},
	}
	if !reflect.DeepEqual(p.Status, want) {
		t.Errorf("status\n%+v\nwant\n%+v", p.Status, want)
	}
	if *p.Status.DryRunSummary == zero {
		t.Error("dry-run summary not counted")
	}
	if p.Next != time.Minute {
		t.Errorf("next %v, want 1m (b's initialDelay)", p.Next)
	}
}

// A metric assessed Failed makes the run terminating: the pass that
// assesses it leaves the run Running while a sibling is in flight, and
// asks to be run again at once; the next one cancels the sibling and
// fails the run (TestReconcileAnalysisRunTerminateSiblingAfterFail, whose
// sibling is a job).
func TestStepSiblingFailure(t *testing.T) {
	r := started(metrics(metric("a", func(m *rolloutsapi.Metric) { interval("1m")(m); asJob(m) }), metric("b", nil)),
		measured("a", 4, 1, inFlight(-10*time.Second)), measured("b", 1, 0, done(rolloutsapi.AnalysisPhaseFailed, -time.Second)))
	p := Step(r, nil, t0)
	if p.Status.Phase != rolloutsapi.AnalysisPhaseRunning || p.Next != Immediately || p.Cancel != nil || p.Due != nil {
		t.Fatalf("first pass: %s, next %v, cancel %+v, due %+v", p.Status.Phase, p.Next, p.Cancel, p.Due)
	}
	if got := p.Status.MetricResults[1].Phase; got != rolloutsapi.AnalysisPhaseFailed {
		t.Fatalf("b is %s", got)
	}
	r.Status = p.Status
	p = Step(r, nil, t0.Add(time.Second))
	if want := []Due{{Metric: "a", Number: 6}}; !reflect.DeepEqual(p.Cancel, want) {
		t.Errorf("cancel %+v, want %+v", p.Cancel, want)
	}
	if p.Status.Phase != rolloutsapi.AnalysisPhaseFailed || p.Status.Message != `Metric "b" assessed Failed due to failed (1) > failureLimit (0)` {
		t.Errorf("run %s %q", p.Status.Phase, p.Status.Message)
	}
	a := p.Status.MetricResults[0]
	last := a.Measurements[len(a.Measurements)-1]
	if a.Phase != rolloutsapi.AnalysisPhaseInconclusive || a.Message != "Metric Terminated" || a.Inconclusive != 1 || a.Count != 5 ||
		last.Phase != rolloutsapi.AnalysisPhaseInconclusive || last.Message != "Metric Terminated" || !last.FinishedAt.Time.Equal(t0.Add(time.Second)) {
		t.Errorf("a: %+v", a)
	}
	if want := (rolloutsapi.RunSummary{Count: 2, Failed: 1, Inconclusive: 1}); p.Status.RunSummary != want {
		t.Errorf("summary %+v, want %+v", p.Status.RunSummary, want)
	}
	if p.Next != 0 {
		t.Errorf("next %v", p.Next)
	}
}

// A dry-run metric's failure is recorded on its result and in the dry-run
// summary, and does not make the run terminating.
func TestStepDryRunSummary(t *testing.T) {
	r := started(rolloutsapi.AnalysisRunSpec{Metrics: []rolloutsapi.Metric{metric("a", interval("1m")), metric("b", nil)},
		DryRun: []rolloutsapi.DryRun{{MetricName: "b"}}},
		measured("a", 1, 0, done(rolloutsapi.AnalysisPhaseSuccessful, -10*time.Second)),
		func() rolloutsapi.MetricResult {
			res := measured("b", 1, 0, done(rolloutsapi.AnalysisPhaseFailed, -time.Second))
			res.DryRun = true
			return res
		}())
	p := Step(r, nil, t0)
	if p.Status.Phase != rolloutsapi.AnalysisPhaseRunning || p.Next != 50*time.Second {
		t.Errorf("run %s, next %v: want Running, 50s", p.Status.Phase, p.Next)
	}
	b := p.Status.MetricResults[1]
	if b.Phase != rolloutsapi.AnalysisPhaseFailed || b.Message != "Metric assessed Failed due to failed (1) > failureLimit (0)" {
		t.Errorf("b %s %q", b.Phase, b.Message)
	}
	if want := (rolloutsapi.RunSummary{Count: 1, Failed: 1}); *p.Status.DryRunSummary != want {
		t.Errorf("dry-run summary %+v, want %+v", *p.Status.DryRunSummary, want)
	}
	if want := (rolloutsapi.RunSummary{Count: 1}); p.Status.RunSummary != want {
		t.Errorf("summary %+v, want %+v", p.Status.RunSummary, want)
	}
}

// Measurements beyond the limit are dropped, and the numbers go on from
// the counters: a name built from one never repeats.
func TestStepHistoryAndNumbers(t *testing.T) {
	r := started(rolloutsapi.AnalysisRunSpec{Metrics: []rolloutsapi.Metric{metric("m", interval("10s")), metric("n", interval("10s"))},
		MeasurementRetention: []rolloutsapi.MeasurementRetention{{MetricName: "^n$", Limit: 2}}})
	now := t0
	for i := 1; i <= 14; i++ {
		p := Step(r, nil, now)
		want := []Due{{Metric: "m", Number: i}, {Metric: "n", Number: i}}
		if !reflect.DeepEqual(p.Due, want) {
			t.Fatalf("pass %d: due %+v, want %+v", i, p.Due, want)
		}
		phase := rolloutsapi.AnalysisPhaseSuccessful
		if i%3 == 0 {
			phase = rolloutsapi.AnalysisPhaseError
		}
		for _, d := range p.Due {
			if !Finish(&p.Status, d, rolloutsapi.Measurement{Phase: phase}, now.Add(time.Second)) {
				t.Fatalf("pass %d: %+v refused", i, d)
			}
		}
		r.Status = p.Status
		if p = Step(r, nil, now.Add(time.Second)); p.Next == 0 || p.Due != nil {
			t.Fatalf("pass %d: next %v, due %+v", i, p.Next, p.Due)
		}
		r.Status = p.Status
		now = now.Add(time.Second + p.Next + time.Millisecond)
	}
	for _, res := range r.Status.MetricResults {
		limit := map[string]int{"m": DefaultMeasurementHistoryLimit, "n": 2}[res.Name]
		if len(res.Measurements) != limit || res.Count+res.Error != 14 || res.Error != 4 {
			t.Errorf("%s: %d measurements, count %d, error %d", res.Name, len(res.Measurements), res.Count, res.Error)
		}
	}
}

// metrics given by the caller (resolved with the Secrets' values) are
// used as given.
func TestStepWithResolvedMetrics(t *testing.T) {
	r := &rolloutsapi.AnalysisRun{Spec: rolloutsapi.AnalysisRunSpec{
		Args:    []rolloutsapi.Argument{{Name: "n", Value: ptr("3")}},
		Metrics: []rolloutsapi.Metric{metric("m", func(m *rolloutsapi.Metric) { m.Interval, m.Count = "1m", str("{{args.n}}") })}}}
	resolved, err := ResolveRunMetrics(r.Spec.Metrics, r.Spec.Args)
	if err != nil {
		t.Fatal(err)
	}
	r.Status = rolloutsapi.AnalysisRunStatus{Phase: rolloutsapi.AnalysisPhaseRunning, StartedAt: at(-time.Hour),
		MetricResults: []rolloutsapi.MetricResult{measured("m", 3, 0, done(rolloutsapi.AnalysisPhaseSuccessful, -2*time.Minute))}}
	if p := Step(r, resolved, t0); p.Status.Phase != rolloutsapi.AnalysisPhaseSuccessful {
		t.Errorf("count of 3 from the args: %s, due %+v", p.Status.Phase, p.Due)
	}
	if p := Step(r, []rolloutsapi.Metric{}, t0); p.Status.Message != "Analysis spec invalid: no metrics specified" {
		t.Errorf("no metrics given: %q", p.Status.Message)
	}
}
