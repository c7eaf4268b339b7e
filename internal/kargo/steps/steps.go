// Package steps runs Kargo's built-in promotion steps (git-clone,
// git-clear, git-commit, git-push, kustomize-set-image, kustomize-build,
// helm-update-chart, helm-template, yaml-update, json-update, copy,
// delete, compose-output) as executor plugins: a step's child action has
// the step's `uses` as task type, and its plugin is the step's Runner
// (one file each), wrapped by plugin.go.
//
// The runners port Kargo v1.6's (internal/promotion/runner/builtin): the
// same config schemas (schemas/, Kargo's, validated with gojsonschema as
// Kargo does), outputs and error messages. Kargo's StepRunner returns a
// StepResult and an error; so does Runner here, and plugin.go maps them
// onto the action (result.go says how the orchestrator reads them back).
//
// The steps of one Promotion share its working directory, as in Kargo
// (paths.go): paths in configs are relative to it and may not leave it.
// The orchestrator removes it when the Promotion ends.
package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// Runner runs the steps of one kind (Kargo's promotion.StepRunner).
type Runner interface {
	// Name is the kind: the `uses` of the steps it runs.
	Name() string
	// Run runs a step. A nil error with status Succeeded or Skipped is
	// success (Running: not done yet, ask again later); an error is the
	// step Errored, and with a TerminalError in its chain it is not
	// retried.
	Run(ctx context.Context, sc *StepContext) (Result, error)
}

// StepContext is what a runner knows of the step it runs (Kargo's
// promotion.StepContext).
type StepContext struct {
	// WorkDir is the Promotion's working directory, shared by its steps.
	WorkDir string
	// GitHome is where git-clone makes its clones' home directories:
	// outside WorkDir, so that no step can read or push their keys.
	GitHome string
	// Alias is the step's alias.
	Alias string
	// Config is the step's config, its expressions evaluated.
	Config map[string]any

	Project, Stage, Promotion string
	// PromotionActor is who created the Promotion.
	PromotionActor string
	// FreightRequests are the target Stage's.
	FreightRequests []kargoapi.FreightRequest
	// Freight is the Freight collection the Promotion leaves the Stage
	// with (the Freight promoted and the Stage's other current Freight).
	Freight kargoapi.FreightCollection
	// TargetFreightRef is the Freight promoted.
	TargetFreightRef kargoapi.FreightReference
}

// Result is a step's outcome (Kargo's promotion.StepResult).
type Result struct {
	Status  kargoapi.PromotionStepStatus
	Message string
	// Output is the step's outputs (outputs.<alias> for later steps).
	Output map[string]any
}

// TerminalError marks an error that retrying would not change (Kargo's
// promotion.TerminalError).
type TerminalError struct{ Err error }

func (e *TerminalError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *TerminalError) Unwrap() error { return e.Err }

// IsTerminal reports whether err is or wraps a TerminalError.
func IsTerminal(err error) bool {
	var te *TerminalError
	return errors.As(err, &te)
}

// errored is Kargo's usual failure: the step Errored, with err.
func errored(err error) (Result, error) {
	return Result{Status: kargoapi.PromotionStepStatusErrored}, err
}

func succeeded(output map[string]any) (Result, error) {
	return Result{Status: kargoapi.PromotionStepStatusSucceeded, Output: output}, nil
}

// decode validates a step's config against the kind's schema and decodes
// it into T (Kargo's validate and promotion.ConfigToStruct).
func decode[T any](kind string, cfg map[string]any) (T, error) {
	var out T
	if err := validate(kind, cfg); err != nil {
		return out, err
	}
	b, err := json.Marshal(cfg)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		return out, fmt.Errorf("could not convert config into %s config: %w", kind, err)
	}
	return out, nil
}
