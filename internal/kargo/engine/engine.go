// Package promotion holds the pure decision logic of running a Kargo
// Promotion as a run of TaskActions: the root action is the Promotion and
// each promotion step is a child action whose task type is the step's `uses`.
// The orchestrator calls Decide after each step ends and does what it says;
// this package never does I/O.
//
// The semantics are those of Kargo v1.6's engine
// (internal/promotion/simple_engine.go, promotion.go; pkg/promotion):
// sequential steps, `if` conditions with success()/failure()/always()/
// status(), the implicit skip after a failure, continueOnError, the
// worst-status phase rule, outputs.<alias>, vars and ${{ }} config
// templating. How Kargo's retry/timeout maps onto TaskAction attempts is in
// attempts.go.
package engine

import (
	"fmt"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// StepStatus is a step's outcome, Kargo's PromotionStepStatus.
type StepStatus = kargoapi.PromotionStepStatus

// Step statuses, in increasing severity.
const (
	StepSucceeded = kargoapi.PromotionStepStatusSucceeded
	StepSkipped   = kargoapi.PromotionStepStatusSkipped
	StepRunning   = kargoapi.PromotionStepStatusRunning
	StepAborted   = kargoapi.PromotionStepStatusAborted
	StepFailed    = kargoapi.PromotionStepStatusFailed
	StepErrored   = kargoapi.PromotionStepStatusErrored
)

// severity orders step statuses as Kargo does. An unknown status ranks above
// Errored (and ends the promotion Errored).
func severity(s StepStatus) int {
	switch s {
	case StepSucceeded:
		return 0
	case StepSkipped:
		return 1
	case StepRunning:
		return 2
	case StepAborted:
		return 3
	case StepFailed:
		return 4
	case StepErrored:
		return 5
	default:
		return 6
	}
}

// FreightRef names the Freight being promoted.
type FreightRef struct {
	Name   string
	Origin kargoapi.FreightOrigin
}

// Context is what expressions see as `ctx`.
type Context struct {
	Project   string // the Project (namespace)
	Promotion string // the Promotion's name
	Stage     string // the target Stage
	Actor     string // who created the Promotion (ctx.meta.promotion.actor)
	// TargetFreight is ctx.targetFreight {name, origin {kind, name}}.
	TargetFreight FreightRef
}

// StepRecord is what is known of a step that was decided: its status and
// message, its outputs (from the child action), when it started and
// finished, and how many consecutive errors it had.
type StepRecord struct {
	Alias      string
	Status     StepStatus
	Message    string
	Outputs    map[string]any
	StartedAt  *time.Time
	FinishedAt *time.Time
	ErrorCount uint32
}

// Input is everything Decide looks at.
type Input struct {
	// Steps are the Promotion's steps, tasks already inflated. A step's
	// alias is its As, or step-<n>/task-<n> when As is empty
	// (PromotionStep.GetAlias).
	Steps []kargoapi.PromotionStep
	// Vars are the Promotion's vars (spec.vars).
	Vars []kargoapi.ExpressionVariable
	Ctx  Context
	// Done has one record per step decided so far, in step order: Done[i]
	// is Steps[i].
	Done []StepRecord
}

// Decision is what to do next. Exactly one of Finished, Skip, Run, Errored
// and Waiting is set.
type Decision struct {
	// Finished: the promotion is over with Phase (Succeeded, Failed,
	// Errored or Aborted) and Message.
	Finished bool
	Phase    kargoapi.PromotionPhase
	Message  string

	// Index and Alias name the step the decision is about (unless
	// Finished).
	Index int
	Alias string

	// Skip: record step Index as Skipped with SkipReason as its message
	// (never leave it out), then call Decide again.
	Skip       bool
	SkipReason string

	// Run: run step Index as a child action of task type Uses with Config,
	// allowing Retries retries and a per-attempt Timeout (0 = none); when
	// it ends, record StepStatusOf(...) and call Decide again.
	Run     bool
	Uses    string
	Config  map[string]any
	Retries int
	Timeout time.Duration

	// Errored: step Index is Errored without running (its `if` or vars or
	// config could not be evaluated, or it has no `uses`): record it with
	// Error as its message and call Decide again (later steps may still run
	// under always() or failure()).
	Errored bool
	Error   string

	// Waiting: the record of step Index is not terminal (Running), so
	// there is nothing to decide yet.
	Waiting bool
}

// Decide returns what to do next, given the steps and what is known of the
// ones decided so far. It is pure: the same Input always gives the same
// Decision.
//
// For the next step (Index = len(Done)):
//   - No `if`: it is skipped when an earlier step that is not
//     continueOnError Failed or Errored (HasFailures).
//   - `if`: the template must evaluate to a bool (env: StepEnv with the
//     step's vars, plus success(), failure(), always(), status('alias'));
//     false skips it; an evaluation error or a non-bool makes it Errored
//     ("error checking if step %q should be skipped: ...").
//   - No `uses` ⇒ Errored.
//   - Its config is evaluated (EvaluateConfig, same env as `if`); an error
//     makes it Errored ("an unrecoverable error occurred: failed to get step
//     config: ...").
//   - Otherwise it runs.
//
// When every step has a record, the promotion is Finished with FinalPhase.
// An Aborted record ends the promotion Aborted at once (an abort is
// promotion-wide in Kargo: no later step runs, not even always() ones).
// Records that do not match the steps end it Errored.
func Decide(in Input) Decision {
	for i, r := range in.Done {
		if i >= len(in.Steps) {
			return finished(kargoapi.PromotionPhaseErrored,
				fmt.Sprintf("%d step records for %d steps", len(in.Done), len(in.Steps)))
		}
		alias := in.Steps[i].GetAlias(i)
		if r.Alias != "" && r.Alias != alias {
			return finished(kargoapi.PromotionPhaseErrored,
				fmt.Sprintf("step record %d is for step %q, but step %d is %q", i, r.Alias, i, alias))
		}
		switch r.Status {
		case StepSucceeded, StepSkipped, StepFailed, StepErrored:
		case StepAborted:
			msg := r.Message
			if msg == "" {
				msg = fmt.Sprintf("step %q was aborted", alias)
			}
			return finished(kargoapi.PromotionPhaseAborted, msg)
		case StepRunning:
			return Decision{Waiting: true, Index: i, Alias: alias}
		default:
			return finished(kargoapi.PromotionPhaseErrored,
				fmt.Sprintf("step %q has an unknown status %q", alias, r.Status))
		}
	}
	done := normalize(in.Steps, in.Done)

	i := len(done)
	if i == len(in.Steps) {
		phase, msg := FinalPhase(in.Steps, done)
		return finished(phase, msg)
	}
	step := in.Steps[i]
	alias := step.GetAlias(i)
	d := Decision{Index: i, Alias: alias}
	errored := func(msg string) Decision {
		d.Errored, d.Error = true, msg
		return d
	}

	// Vars are evaluated only when something uses them, as in Kargo (a step
	// with neither `if` nor config never evaluates its vars).
	var env map[string]any
	stepEnv := func() (map[string]any, error) {
		if env != nil {
			return env, nil
		}
		vars, err := StepVars(in.Vars, step, alias, in.Ctx, done)
		if err != nil {
			return nil, err
		}
		env = StepEnv(in.Ctx, alias, vars, done)
		return env, nil
	}
	fns := statusFunctions(alias, in.Steps, done)

	if step.If == "" {
		if HasFailures(in.Steps, done) {
			d.Skip, d.SkipReason = true, "skipped because an earlier step failed or errored"
			return d
		}
	} else {
		run, err := func() (bool, error) {
			env, err := stepEnv()
			if err != nil {
				return false, err
			}
			v, err := EvaluateTemplate(step.If, env, fns...)
			if err != nil {
				return false, err
			}
			b, ok := v.(bool)
			if !ok {
				return false, fmt.Errorf("expression must evaluate to a boolean")
			}
			return b, nil
		}()
		if err != nil {
			return errored(fmt.Sprintf("error checking if step %q should be skipped: %s", alias, err))
		}
		if !run {
			d.Skip, d.SkipReason = true, fmt.Sprintf("skipped because %q evaluated to false", step.If)
			return d
		}
	}

	if step.Uses == "" {
		if step.Task != nil {
			return errored(fmt.Sprintf("step %q refers to task %q, which was not inflated", alias, step.Task.Name))
		}
		return errored(fmt.Sprintf("step %q has no uses", alias))
	}

	var cfg map[string]any
	if step.Config != nil && len(step.Config.Raw) > 0 {
		err := func() error {
			env, err := stepEnv()
			if err != nil {
				return err
			}
			cfg, err = EvaluateConfig(step.Config.Raw, env, fns...)
			return err
		}()
		if err != nil {
			return errored(fmt.Sprintf("an unrecoverable error occurred: failed to get step config: %s", err))
		}
	}

	d.Run = true
	d.Uses = step.Uses
	d.Config = cfg
	d.Retries = Retries(step)
	d.Timeout = Timeout(step)
	return d
}

func finished(phase kargoapi.PromotionPhase, msg string) Decision {
	return Decision{Finished: true, Phase: phase, Message: msg}
}

// normalize fills in records' empty aliases.
func normalize(steps []kargoapi.PromotionStep, done []StepRecord) []StepRecord {
	out := make([]StepRecord, len(done))
	for i, r := range done {
		if r.Alias == "" {
			r.Alias = steps[i].GetAlias(i)
		}
		out[i] = r
	}
	return out
}

// HasFailures reports whether a step that is not continueOnError Failed or
// Errored (Kargo's StepExecutionMetadataList.HasFailures). done[i] is
// steps[i].
func HasFailures(steps []kargoapi.PromotionStep, done []StepRecord) bool {
	for i, r := range done {
		if i < len(steps) && steps[i].ContinueOnError {
			continue
		}
		if r.Status == StepFailed || r.Status == StepErrored {
			return true
		}
	}
	return false
}

// FinalPhase is the promotion's phase from its step records (Kargo's
// determinePromoPhase): the worst status, by severity Succeeded < Skipped <
// Running < Aborted < Failed < Errored, of the steps that are not
// continueOnError; Succeeded or Skipped ⇒ Succeeded, Aborted ⇒ Aborted,
// Failed ⇒ Failed, anything else ⇒ Errored. The message is the worst step's
// message ("" when Succeeded).
func FinalPhase(steps []kargoapi.PromotionStep, done []StepRecord) (kargoapi.PromotionPhase, string) {
	worst, msg := StepSucceeded, ""
	for i, r := range done {
		if i < len(steps) && steps[i].ContinueOnError {
			continue
		}
		if severity(r.Status) > severity(worst) {
			worst, msg = r.Status, r.Message
		}
	}
	switch worst {
	case StepSucceeded, StepSkipped:
		return kargoapi.PromotionPhaseSucceeded, ""
	case StepAborted:
		return kargoapi.PromotionPhaseAborted, msg
	case StepFailed:
		return kargoapi.PromotionPhaseFailed, msg
	default:
		return kargoapi.PromotionPhaseErrored, msg
	}
}
