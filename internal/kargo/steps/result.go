package steps

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// ResultFile is where a step's plugin writes the step's outcome in its
// action's output directory, beside outputs.json: Kargo's step status
// (Succeeded, Skipped, Errored, Failed) and message, which an action's
// phase alone does not carry (a git-commit with nothing to commit is
// Skipped; a runner's error is Errored, and Kargo words the Promotion's
// message by that). The orchestrator reads it when the action ends.
const ResultFile = "kargo-step.json"

// Outcome is what ResultFile holds.
type Outcome struct {
	// Attempt is the action's attempt that wrote it.
	Attempt uint32 `json:"attempt"`
	// Status is Kargo's step status.
	Status kargoapi.PromotionStepStatus `json:"status"`
	// Message is the step's message: for an error, Kargo's
	// `error running step "<alias>": <error>`.
	Message string `json:"message,omitempty"`
	// Terminal: the error was one that retrying would not change.
	Terminal bool `json:"terminal,omitempty"`
	// Output is the step's outputs (also in outputs.json on success);
	// kept here so that a repeated round reports the same ones.
	Output map[string]any `json:"output,omitempty"`
}

// ReadOutcome reads the outcome a step's plugin wrote in an action's
// output directory; nil when there is none (another plugin ran it).
func ReadOutcome(dir string) (*Outcome, error) {
	b, err := os.ReadFile(filepath.Join(dir, ResultFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var o Outcome
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("%s: %w", ResultFile, err)
	}
	return &o, nil
}

// writeOutcome writes the outcome (atomically: a reader sees the old one
// or the new one).
func writeOutcome(dir string, o Outcome) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, ResultFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, ResultFile))
}
