// Package measure takes an AnalysisRun's web and Prometheus measurements
// as an executor plugin: each measurement is a TaskAction (the runner,
// package analysis/runner, enqueues it with the metric, its args
// resolved), so it has attempts, a trace and a place in the run tree.
// The measurement itself, phase, value and message as Rollouts records
// them, goes into the action's plugin state, which the runner reads back
// (Result); its phase history says it in words.
package measure

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/analysis/providers"
	"taskactions/internal/analysis/rules"
	"taskactions/internal/executor/plugins"
)

// TaskType is the task type of a web or Prometheus measurement.
const TaskType = "analysis-measurement"

// stateVersion is the schema of State.
const stateVersion = 1

// State is the plugin state of a measurement's action: the measurement
// as JSON, once taken.
type State struct{ Measurement []byte }

// Plugin takes measurements through one HTTP client, which limits the
// hosts they may call (the http step's allowlist).
type Plugin struct {
	client   *http.Client
	inflight plugins.Inflight // measurements under way
}

// New returns a plugin calling through client.
func New(client *http.Client) *Plugin {
	return &Plugin{client: client}
}

// HoldsNothing: a measurement holds nothing between rounds.
func (*Plugin) HoldsNothing() {}

// Template is the task template of a measurement of metric.
func Template(metric rolloutsapi.Metric) (json.RawMessage, error) {
	m, err := toMap(metric)
	if err != nil {
		return nil, err
	}
	return json.Marshal(plugins.Template{Type: TaskType, Custom: map[string]any{"metric": m}})
}

// Handle takes the measurement once per attempt: a repeated round reports
// the one taken.
func (p *Plugin) Handle(ctx context.Context, tc *plugins.TaskContext) (plugins.Transition, error) {
	var st State
	if _, ok, err := tc.LoadState(&st); err != nil {
		return plugins.Transition{}, err
	} else if ok && len(st.Measurement) > 0 {
		var m rolloutsapi.Measurement
		if err := json.Unmarshal(st.Measurement, &m); err != nil {
			return plugins.Transition{}, fmt.Errorf("decode the measurement: %w", err)
		}
		return transition(m, st), nil
	}
	metric, err := metricOf(tc.Template)
	if err != nil {
		return plugins.Transition{Phase: plugins.PhasePermanentFailure, Info: "NotAMeasurement",
			Error: &plugins.ExecutionError{Code: "NotAMeasurement", Message: err.Error()}}, nil
	}
	runCtx, done := p.inflight.Start(ctx, tc)
	defer done()
	m := p.measure(runCtx, metric)
	b, err := json.Marshal(m)
	if err != nil {
		return plugins.Transition{}, fmt.Errorf("encode the measurement: %w", err)
	}
	return transition(m, State{Measurement: b}), nil
}

// measure runs the metric's provider.
func (p *Plugin) measure(ctx context.Context, metric rolloutsapi.Metric) rolloutsapi.Measurement {
	switch {
	case metric.Provider.Web != nil:
		return providers.Web(ctx, p.client, metric, rules.Evaluate)
	case metric.Provider.Prometheus != nil:
		return providers.Prometheus(ctx, p.client, metric, rules.Evaluate)
	}
	now := metav1.Now()
	return rolloutsapi.Measurement{Phase: rolloutsapi.AnalysisPhaseError, StartedAt: &now, FinishedAt: &now,
		Message: fmt.Sprintf("no valid provider in metric '%s'", metric.Name)}
}

// transition reports a measurement: a Successful one succeeds, any other
// fails for good (Rollouts' limits decide what follows, not retries), with
// the phase in the error code; either way the words say the value.
func transition(m rolloutsapi.Measurement, st State) plugins.Transition {
	tr := plugins.Transition{Phase: plugins.PhaseSuccess, Info: Describe(m), State: st, StateVersion: stateVersion}
	if m.Phase != rolloutsapi.AnalysisPhaseSuccessful {
		tr.Phase = plugins.PhasePermanentFailure
		tr.Error = &plugins.ExecutionError{Code: "Measurement" + string(m.Phase), Message: Describe(m)}
	}
	return tr
}

// Describe says a measurement in words: its phase, value and message.
func Describe(m rolloutsapi.Measurement) string {
	s := string(m.Phase)
	if m.Value != "" {
		s += ", value " + m.Value
	}
	if m.Message != "" {
		s += ": " + m.Message
	}
	return s
}

// Abort cancels a measurement in flight.
func (p *Plugin) Abort(_ context.Context, tc *plugins.TaskContext) error {
	p.inflight.Abort(tc)
	return nil
}

// Finalize has nothing to release.
func (*Plugin) Finalize(context.Context, *plugins.TaskContext) error { return nil }

// Result is the measurement a finished action of this plugin recorded, if
// it recorded one.
func Result(ta *v1.TaskAction) (rolloutsapi.Measurement, bool) {
	var st State
	if len(ta.Status.PluginState) == 0 || plugins.DecodeState(ta.Status.PluginState, &st) != nil || len(st.Measurement) == 0 {
		return rolloutsapi.Measurement{}, false
	}
	var m rolloutsapi.Measurement
	if err := json.Unmarshal(st.Measurement, &m); err != nil {
		return rolloutsapi.Measurement{}, false
	}
	return m, true
}

func metricOf(t plugins.Template) (rolloutsapi.Metric, error) {
	var m rolloutsapi.Metric
	raw, ok := t.Custom["metric"]
	if !ok {
		return m, fmt.Errorf("task template of type %q has no custom.metric", t.Type)
	}
	b, err := json.Marshal(raw)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		return m, fmt.Errorf("custom.metric: %w", err)
	}
	return m, nil
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(b, &m)
}
