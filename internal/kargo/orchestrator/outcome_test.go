package orchestrator

import (
	"testing"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/kargo/engine"
	"taskactions/internal/kargo/steps"
)

// A built-in step's outcome gives the record Kargo's status and wording.
func TestRunnerEnd(t *testing.T) {
	three := kargoapi.PromotionStep{Retry: &kargoapi.PromotionStepRetry{ErrorThreshold: 3}}
	base := engine.StepRecord{Alias: "clone", Status: kargoapi.PromotionStepStatusFailed, Message: "raw"}
	errMsg := `error running step "clone": error cloning x: boom`
	for _, c := range []struct {
		name     string
		step     kargoapi.PromotionStep
		phase    v1.Phase
		attempts uint32
		o        *steps.Outcome
		status   kargoapi.PromotionStepStatus
		msg      string
	}{
		{"another plugin", kargoapi.PromotionStep{}, v1.PhaseFailed, 1, nil, kargoapi.PromotionStepStatusFailed, "raw"},
		{"errored", kargoapi.PromotionStep{}, v1.PhaseFailed, 1, &steps.Outcome{Attempt: 1, Status: "Errored", Message: errMsg},
			kargoapi.PromotionStepStatusErrored, `step "clone" met error threshold of 1: ` + errMsg},
		{"errored, threshold 3", three, v1.PhaseFailed, 3, &steps.Outcome{Attempt: 3, Status: "Errored", Message: errMsg},
			kargoapi.PromotionStepStatusErrored, `step "clone" met error threshold of 3: ` + errMsg},
		{"terminal", three, v1.PhaseFailed, 1, &steps.Outcome{Attempt: 1, Status: "Failed", Terminal: true, Message: `error running step "clone": merge conflict`},
			kargoapi.PromotionStepStatusErrored, `an unrecoverable error occurred: error running step "clone": merge conflict`},
		{"an older attempt's", kargoapi.PromotionStep{}, v1.PhaseFailed, 2, &steps.Outcome{Attempt: 1, Status: "Errored", Message: errMsg},
			kargoapi.PromotionStepStatusFailed, "raw"},
		{"skipped", kargoapi.PromotionStep{}, v1.PhaseSucceeded, 1, &steps.Outcome{Attempt: 1, Status: "Skipped"},
			kargoapi.PromotionStepStatusSkipped, "raw"},
	} {
		r := runnerEnd(c.step, base, c.phase, c.attempts, c.o)
		if r.Status != c.status || r.Message != c.msg {
			t.Errorf("%s: %s %q, want %s %q", c.name, r.Status, r.Message, c.status, c.msg)
		}
	}
}
