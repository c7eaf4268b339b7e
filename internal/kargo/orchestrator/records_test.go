package orchestrator

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/kargo/engine"
	"taskactions/internal/taskactions"
)

// TestRecordsRoundTrip: what setRecord writes into a Promotion's status,
// records reads back, so a restarted orchestrator resumes from it.
func TestRecordsRoundTrip(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	t1 := t0.Add(time.Second)
	written := []engine.StepRecord{
		{Alias: "clone", Status: kargoapi.PromotionStepStatusSucceeded, StartedAt: &t0, FinishedAt: &t1,
			Outputs: map[string]any{"commit": "abc", "n": 2.0}},
		{Alias: "skipped", Status: kargoapi.PromotionStepStatusSkipped, Message: "skipped because", StartedAt: &t1, FinishedAt: &t1},
		{Alias: "push", Status: kargoapi.PromotionStepStatusRunning, StartedAt: &t1, ErrorCount: 1},
	}
	p := promotion(kargoapi.PromotionPhaseRunning, nil)
	for i, r := range written {
		setRecord(&p.Status, i, r, i == 1)
	}
	if got := records(p); !reflect.DeepEqual(got, written) {
		t.Errorf("records read back:\n%+v\nwant\n%+v", got, written)
	}
	if p.Status.CurrentStep != 2 || !p.Status.StepExecutionMetadata[1].ContinueOnError || p.Status.StepExecutionMetadata[0].ContinueOnError {
		t.Errorf("currentStep %d, metadata %+v", p.Status.CurrentStep, p.Status.StepExecutionMetadata)
	}

	// The running step ends: its record is replaced, not appended, and the
	// earlier outputs stay in status.state beside the new ones.
	ended := written[2]
	ended.Status, ended.FinishedAt, ended.ErrorCount = kargoapi.PromotionStepStatusSucceeded, &t1, 0
	ended.Outputs = map[string]any{"pr": "1"}
	setRecord(&p.Status, 2, ended, false)
	got := records(p)
	if len(got) != 3 || !reflect.DeepEqual(got[2], ended) || !reflect.DeepEqual(got[0].Outputs, written[0].Outputs) {
		t.Errorf("after the end of step 3: %+v", got)
	}
	if state := p.Status.GetState(); len(state) != 2 {
		t.Errorf("status.state %v, want the outputs of clone and push", state)
	}
}

func TestReadOutputs(t *testing.T) {
	tests := []struct {
		name string
		file string // "" = no outputs.json
		want map[string]any
		err  error
	}{
		{name: "no file", err: errNoOutputs},
		{name: "an object", file: `{"commit":"abc","n":2}`, want: map[string]any{"commit": "abc", "n": 2.0}},
		{name: "not an object", file: "plain text\n", want: map[string]any{"value": "plain text\n"}},
		{name: "an array", file: `[1,2]`, want: map[string]any{"value": "[1,2]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				if err := os.WriteFile(filepath.Join(dir, "outputs.json"), []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := readOutputs(dir)
			if !errors.Is(err, tc.err) || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("readOutputs = %v, %v; want %v, %v", got, err, tc.want, tc.err)
			}
		})
	}
	// A directory where the file should be is an error, not "no outputs".
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "outputs.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := readOutputs(dir); err == nil {
		t.Error("outputs.json a directory: no error")
	}
}

// TestEndedReadsOutputs: a step whose action succeeded ends Succeeded with
// the outputs its action left on this disk, and Errored, saying why, when
// they are not here (another replica ran it and stopped before the
// step's end was recorded): not Succeeded without them, which a later
// step's expression would then fail on, with an error naming nil.
func TestEndedReadsOutputs(t *testing.T) {
	p := &kargoapi.Promotion{}
	p.Namespace, p.Name = "kargo-demo", "prod.abc"
	p.Spec.Steps = []kargoapi.PromotionStep{{Uses: "echo", As: "say"}}
	running := engine.StepRecord{Alias: "say", Status: kargoapi.PromotionStepStatusRunning}
	succeeded := &taskactions.Action{Phase: v1.PhaseSucceeded, Attempts: 1}

	for _, tc := range []struct {
		name    string
		file    string // "" = no outputs.json
		status  kargoapi.PromotionStepStatus
		outputs map[string]any
		message string
	}{
		{name: "its outputs here", file: `{"said":"hi"}`, status: kargoapi.PromotionStepStatusSucceeded, outputs: map[string]any{"said": "hi"}},
		{name: "none, as the executor writes it", file: `{}`, status: kargoapi.PromotionStepStatusSucceeded, outputs: map[string]any{}},
		{name: "not on this disk", status: kargoapi.PromotionStepStatusErrored,
			message: `read the outputs of step "say": ` + errNoOutputs.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Orchestrator{cfg: Config{OutputRoot: t.TempDir()}}
			if tc.file != "" {
				id := o.stepID(p, 0)
				dir := filepath.Join(o.cfg.OutputRoot, id.Project, id.Domain, id.Run, id.Name)
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "outputs.json"), []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r, ended := o.ended(p, 0, running, succeeded)
			if !ended || r.Status != tc.status || r.Message != tc.message || !reflect.DeepEqual(r.Outputs, tc.outputs) {
				t.Errorf("ended = %v, %s %q, outputs %v; want %s %q, outputs %v",
					ended, r.Status, r.Message, r.Outputs, tc.status, tc.message, tc.outputs)
			}
		})
	}
}
