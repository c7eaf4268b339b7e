package rules

import (
	"reflect"
	"testing"
	"time"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

func running() rolloutsapi.AnalysisRunStatus {
	return rolloutsapi.AnalysisRunStatus{Phase: rolloutsapi.AnalysisPhaseRunning}
}

// Start records a Running measurement once, as Rollouts records an
// asynchronous one; a second or stale start changes nothing.
func TestStart(t *testing.T) {
	st := running()
	if !Start(&st, Due{Metric: "m", Number: 1, DryRun: true}, t0) {
		t.Fatal("first start refused")
	}
	want := []rolloutsapi.MetricResult{{Name: "m", Phase: rolloutsapi.AnalysisPhaseRunning, DryRun: true,
		Measurements: []rolloutsapi.Measurement{inFlight(0)}}}
	if !reflect.DeepEqual(st.MetricResults, want) {
		t.Fatalf("got %+v, want %+v", st.MetricResults, want)
	}
	for _, tc := range []struct {
		name string
		st   func() rolloutsapi.AnalysisRunStatus
		due  Due
	}{
		{"already in flight", func() rolloutsapi.AnalysisRunStatus { return *st.DeepCopy() }, Due{Metric: "m", Number: 1}},
		{"stale number", func() rolloutsapi.AnalysisRunStatus {
			s := running()
			s.MetricResults = []rolloutsapi.MetricResult{{Name: "m", Phase: rolloutsapi.AnalysisPhaseRunning, Count: 2, Error: 1,
				Measurements: []rolloutsapi.Measurement{done(rolloutsapi.AnalysisPhaseError, -time.Minute)}}}
			return s
		}, Due{Metric: "m", Number: 3}},
		{"number ahead", running, Due{Metric: "m", Number: 2}},
		{"metric assessed", func() rolloutsapi.AnalysisRunStatus {
			s := running()
			s.MetricResults = []rolloutsapi.MetricResult{{Name: "m", Phase: rolloutsapi.AnalysisPhaseSuccessful, Count: 1}}
			return s
		}, Due{Metric: "m", Number: 2}},
		{"run terminal", func() rolloutsapi.AnalysisRunStatus {
			return rolloutsapi.AnalysisRunStatus{Phase: rolloutsapi.AnalysisPhaseFailed}
		}, Due{Metric: "m", Number: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.st()
			before := *s.DeepCopy()
			if Start(&s, tc.due, t0.Add(time.Minute)) {
				t.Error("started")
			}
			if !reflect.DeepEqual(s, before) {
				t.Errorf("changed: %+v", s)
			}
		})
	}
}

// Finish counts a measurement as Rollouts' runMeasurements does.
func TestFinishCounters(t *testing.T) {
	base := rolloutsapi.MetricResult{Name: "m", Phase: rolloutsapi.AnalysisPhaseRunning,
		Count: 3, Successful: 2, Failed: 1, Error: 2, ConsecutiveError: 2, ConsecutiveSuccess: 1,
		Measurements: []rolloutsapi.Measurement{inFlight(-time.Second)}}
	for _, tc := range []struct {
		phase rolloutsapi.AnalysisPhase
		want  rolloutsapi.MetricResult // counters only
	}{
		{rolloutsapi.AnalysisPhaseSuccessful, rolloutsapi.MetricResult{Count: 4, Successful: 3, Failed: 1, Error: 2, ConsecutiveSuccess: 2}},
		{rolloutsapi.AnalysisPhaseFailed, rolloutsapi.MetricResult{Count: 4, Successful: 2, Failed: 2, Error: 2}},
		{rolloutsapi.AnalysisPhaseInconclusive, rolloutsapi.MetricResult{Count: 4, Successful: 2, Failed: 1, Inconclusive: 1, Error: 2}},
		{rolloutsapi.AnalysisPhaseError, rolloutsapi.MetricResult{Count: 3, Successful: 2, Failed: 1, Error: 3, ConsecutiveError: 3}},
		{rolloutsapi.AnalysisPhaseRunning, rolloutsapi.MetricResult{Count: 3, Successful: 2, Failed: 1, Error: 2, ConsecutiveError: 2, ConsecutiveSuccess: 1}},
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			st := running()
			st.MetricResults = []rolloutsapi.MetricResult{*base.DeepCopy()}
			if !Finish(&st, Due{Metric: "m", Number: 6}, rolloutsapi.Measurement{Phase: tc.phase, Value: "0.99"}, t0) {
				t.Fatal("refused")
			}
			r := st.MetricResults[0]
			got := rolloutsapi.MetricResult{Count: r.Count, Successful: r.Successful, Failed: r.Failed, Inconclusive: r.Inconclusive,
				Error: r.Error, ConsecutiveError: r.ConsecutiveError, ConsecutiveSuccess: r.ConsecutiveSuccess}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("counters %+v, want %+v", got, tc.want)
			}
			m := r.Measurements[0]
			if m.Value != "0.99" || m.Phase != tc.phase || !m.StartedAt.Equal(at(-time.Second)) {
				t.Errorf("measurement %+v", m)
			}
			if finished := m.FinishedAt != nil; finished != tc.phase.Completed() {
				t.Errorf("finishedAt %v for %s", m.FinishedAt, tc.phase)
			} else if finished && !m.FinishedAt.Time.Equal(t0) {
				t.Errorf("finishedAt %v, want now", m.FinishedAt)
			}
			if r.Phase != rolloutsapi.AnalysisPhaseRunning {
				t.Errorf("metric phase %s: assessing is Step's", r.Phase)
			}
		})
	}
}

// Finish keeps what the report leaves out, and refuses a report that is
// not of the measurement in flight.
func TestFinishReport(t *testing.T) {
	started := inFlight(-time.Minute)
	started.Metadata = map[string]string{"task": "m-3"}
	st := running()
	st.MetricResults = []rolloutsapi.MetricResult{{Name: "m", Phase: rolloutsapi.AnalysisPhaseRunning, Count: 2,
		Measurements: []rolloutsapi.Measurement{done(rolloutsapi.AnalysisPhaseSuccessful, -2*time.Minute), started}}}

	for _, tc := range []struct {
		name string
		st   rolloutsapi.AnalysisRunStatus
		due  Due
	}{
		{"stale number", st, Due{Metric: "m", Number: 2}},
		{"unknown metric", st, Due{Metric: "x", Number: 1}},
		{"run terminal", func() rolloutsapi.AnalysisRunStatus {
			s := *st.DeepCopy()
			s.Phase = rolloutsapi.AnalysisPhaseSuccessful
			return s
		}(), Due{Metric: "m", Number: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := *tc.st.DeepCopy()
			if Finish(&s, tc.due, rolloutsapi.Measurement{Phase: rolloutsapi.AnalysisPhaseSuccessful}, t0) {
				t.Error("accepted")
			}
			if !reflect.DeepEqual(s, tc.st) {
				t.Errorf("changed: %+v", s)
			}
		})
	}

	s := *st.DeepCopy()
	report := rolloutsapi.Measurement{Phase: rolloutsapi.AnalysisPhaseFailed, Message: "p99 too high", FinishedAt: at(-time.Second)}
	if !Finish(&s, Due{Metric: "m", Number: 3}, report, t0) {
		t.Fatal("refused")
	}
	want := rolloutsapi.Measurement{Phase: rolloutsapi.AnalysisPhaseFailed, Message: "p99 too high",
		StartedAt: at(-time.Minute), FinishedAt: at(-time.Second), Metadata: map[string]string{"task": "m-3"}}
	if got := s.MetricResults[0].Measurements[1]; !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if Finish(&s, Due{Metric: "m", Number: 3}, report, t0) {
		t.Error("a second report accepted")
	}
}

func TestInFlight(t *testing.T) {
	st := running()
	st.MetricResults = []rolloutsapi.MetricResult{
		{Name: "a", Count: 4, Error: 1, Measurements: []rolloutsapi.Measurement{inFlight(0)}},
		{Name: "b", Count: 1, Measurements: []rolloutsapi.Measurement{done(rolloutsapi.AnalysisPhaseSuccessful, 0)}},
		{Name: "c", DryRun: true, Measurements: []rolloutsapi.Measurement{inFlight(0)}},
		{Name: "d"},
	}
	want := []Due{{Metric: "a", Number: 6}, {Metric: "c", Number: 1, DryRun: true}}
	if got := InFlight(&st); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// Rollouts' garbageCollectMeasurements (TestTrimMeasurementHistory): the
// last measurements kept, a retention rule's limit over the default.
func TestTrimMeasurements(t *testing.T) {
	values := func(n int) []rolloutsapi.Measurement {
		var ms []rolloutsapi.Measurement
		for i := 1; i <= n; i++ {
			m := done(rolloutsapi.AnalysisPhaseSuccessful, time.Duration(i)*time.Second)
			m.Value = string(rune('0' + i%10))
			ms = append(ms, m)
		}
		return ms
	}
	metrics := []rolloutsapi.Metric{{Name: "metric1"}, {Name: "metric2"}}
	for _, tc := range []struct {
		name      string
		counts    [3]int // measurements of metric1, metric2 and a result no metric names
		retention map[string]rolloutsapi.MeasurementRetention
		want      [3]string
	}{
		{"default limit 10", [3]int{11, 3, 12}, nil, [3]string{"2345678901", "123", "123456789012"}},
		{"a rule's limit", [3]int{3, 3, 0}, map[string]rolloutsapi.MeasurementRetention{"metric2": {MetricName: "metric2", Limit: 2}},
			[3]string{"123", "23", ""}},
		{"a rule's limit 0 is the default", [3]int{12, 3, 0}, map[string]rolloutsapi.MeasurementRetention{"metric1": {MetricName: "metric1"}},
			[3]string{"3456789012", "123", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := running()
			for i, name := range []string{"metric1", "metric2", "gone"} {
				st.MetricResults = append(st.MetricResults, rolloutsapi.MetricResult{Name: name, Measurements: values(tc.counts[i])})
			}
			trimMeasurements(&st, metrics, tc.retention)
			for i, r := range st.MetricResults {
				got := ""
				for _, m := range r.Measurements {
					got += m.Value
				}
				if got != tc.want[i] {
					t.Errorf("%s kept %q, want %q", r.Name, got, tc.want[i])
				}
			}
		})
	}
}
