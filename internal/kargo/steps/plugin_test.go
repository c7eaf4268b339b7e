package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/executor/plugins"
)

func TestOutcomeAndTransition(t *testing.T) {
	ok := Result{Status: kargoapi.PromotionStepStatusSucceeded, Output: map[string]any{"a": 1}}
	for _, c := range []struct {
		name  string
		res   Result
		err   error
		want  Outcome
		phase plugins.Phase
	}{
		{"success", ok, nil, Outcome{Attempt: 2, Status: "Succeeded", Output: ok.Output}, plugins.PhaseSuccess},
		{"skipped", Result{Status: kargoapi.PromotionStepStatusSkipped}, nil, Outcome{Attempt: 2, Status: "Skipped"}, plugins.PhaseSuccess},
		{"error", Result{Status: kargoapi.PromotionStepStatusErrored}, errors.New("boom"),
			Outcome{Attempt: 2, Status: "Errored", Message: `error running step "s": boom`}, plugins.PhaseRetryableFailure},
		{"terminal", Result{Status: kargoapi.PromotionStepStatusErrored}, &TerminalError{Err: errors.New("never")},
			Outcome{Attempt: 2, Status: "Errored", Message: `error running step "s": never`, Terminal: true}, plugins.PhasePermanentFailure},
		{"errored without error", Result{Status: kargoapi.PromotionStepStatusErrored}, nil,
			Outcome{Attempt: 2, Status: "Errored", Message: `step "s" errored: no details provided`}, plugins.PhaseRetryableFailure},
	} {
		o := outcomeOf(2, "s", c.res, c.err)
		if o.Attempt != c.want.Attempt || o.Status != c.want.Status || o.Message != c.want.Message || o.Terminal != c.want.Terminal {
			t.Errorf("%s: outcome %+v, want %+v", c.name, o, c.want)
		}
		if tr := transitionOf(o); tr.Phase != c.phase || (tr.Error != nil) != (c.phase != plugins.PhaseSuccess) ||
			(tr.Error != nil && tr.Error.Message != c.want.Message) {
			t.Errorf("%s: transition %+v", c.name, tr)
		}
	}
}

type noPromotions struct{ p *kargoapi.Promotion }

func (n noPromotions) OfRun(string, string) *kargoapi.Promotion { return n.p }

type noStages struct{}

func (noStages) Get(string, string) (*kargoapi.Stage, error) { return nil, nil }

// counting counts its runs.
type counting struct{ runs int }

func (c *counting) Name() string { return "compose-output" }
func (c *counting) Run(context.Context, *StepContext) (Result, error) {
	c.runs++
	return succeeded(map[string]any{"n": c.runs})
}

// An action that is not a recorded running step of a Promotion runs
// nothing; a step runs once per attempt, a repeated round answers from
// its outcome file.
func TestPluginRunsOnlyDecidedStepsOnce(t *testing.T) {
	promo := &kargoapi.Promotion{}
	promo.Name, promo.Namespace = "test.01jabcdefghjkmnpqrstvwxyz0.abc1234", "demo"
	promo.Spec.Stage = "test"
	promo.Spec.Steps = []kargoapi.PromotionStep{{Uses: "compose-output"}}
	r := &counting{}
	p := newPlugin(r, Config{Promotions: noPromotions{promo}, Stages: noStages{}, Dirs: Dirs{Root: t.TempDir()}})
	tc := &plugins.TaskContext{Project: "demo", Domain: "kargo", Run: "r", Action: "step-1", UID: "u", Attempt: 1, OutputDir: t.TempDir()}

	tr, _ := p.Handle(context.Background(), tc) // not recorded Running: refused
	if tr.Phase != plugins.PhasePermanentFailure || !strings.Contains(tr.Error.Message, "is not a running step of a Promotion") || r.runs != 0 {
		t.Fatalf("an undecided step: %+v, %d runs", tr, r.runs)
	}
	other := *tc
	other.Domain = "development"
	if tr, _ := p.Handle(context.Background(), &other); tr.Phase != plugins.PhasePermanentFailure || !strings.Contains(tr.Error.Message, `not in domain "development"`) {
		t.Fatalf("another domain: %+v", tr)
	}
	promo.Status.StepExecutionMetadata = []kargoapi.StepExecutionMetadata{{Alias: "step-1", Status: kargoapi.PromotionStepStatusRunning}}
	tc.UID = "u2"
	// Decided, but the orchestrator has not made the working directory
	// here (the Gate holds such an action): the step never makes it.
	if tr, _ := p.Handle(context.Background(), tc); tr.Phase != plugins.PhasePermanentFailure ||
		!strings.Contains(tr.Error.Message, "working directory is not on this replica's disk") || r.runs != 0 {
		t.Fatalf("no working directory: %+v, %d runs", tr, r.runs)
	}
	if ok, err := p.dirs.Exists("demo", "r"); ok || err != nil {
		t.Fatalf("the step made the working directory (%v)", err)
	}
	if err := p.dirs.Make("demo", "r"); err != nil {
		t.Fatal(err)
	}
	tc.UID = "u3"
	for range 2 {
		tr, err := p.Handle(context.Background(), tc)
		if err != nil || tr.Phase != plugins.PhaseSuccess || fmt.Sprint(tr.Outputs.(map[string]any)["n"]) != "1" {
			t.Fatalf("round: %+v %v", tr, err)
		}
	}
	if r.runs != 1 {
		t.Fatalf("%d runs for one attempt", r.runs)
	}
	o, err := ReadOutcome(tc.OutputDir)
	if err != nil || o == nil || o.Attempt != 1 || o.Status != kargoapi.PromotionStepStatusSucceeded {
		t.Fatalf("outcome %+v %v", o, err)
	}
}

func TestRefusedSteps(t *testing.T) {
	for _, r := range Runners(Config{}) {
		ref, ok := r.(refused)
		if !ok {
			continue
		}
		res, err := ref.Run(context.Background(), nil)
		if res.Status != kargoapi.PromotionStepStatusErrored || !IsTerminal(err) {
			t.Errorf("%s: %s %v", ref.kind, res.Status, err)
		}
	}
	want := map[string]string{"argocd-update": "needs Argo CD", "git-open-pr": "pull request API", "git-wait-for-pr": "pull request API", "helm-update-image": "removed in Kargo v1.3"}
	for _, r := range Runners(Config{}) {
		if w, ok := want[r.Name()]; ok {
			_, err := r.Run(context.Background(), nil)
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v", r.Name(), err)
			}
			delete(want, r.Name())
		}
	}
	if len(want) > 0 {
		t.Errorf("not registered: %v", want)
	}
}
