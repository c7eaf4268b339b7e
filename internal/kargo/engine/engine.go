// Package engine is Kargo's promotion engine without the running: the
// rules between the steps of a Promotion, and the expressions in them. The
// orchestrator (package orchestrator) runs each step as a child action and
// calls Decide after each one ends; this package never does I/O.
//
// The semantics are those of Kargo v1.6's engine
// (internal/promotion/simple_engine.go, promotion.go; pkg/promotion):
// sequential steps, `if` conditions with success()/failure()/always()/
// status(), the implicit skip after a failure, continueOnError, the
// worst-status phase rule (engine.go), outputs.<alias>, vars (vars.go) and
// ${{ }} config templating (template.go), and Kargo's freight functions
// (imageFrom, commitFrom, chartFrom, warehouse, freightMetadata:
// functions.go, finder.go). How Kargo's retry/timeout maps onto
// TaskAction attempts is in attempts.go.
package engine

import (
	"fmt"
	"time"

	"github.com/expr-lang/expr"

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
	// Freight gives expressions Kargo's freight functions (imageFrom(),
	// commitFrom(), chartFrom(), warehouse(), freightMetadata()); nil:
	// none.
	Freight *FreightScope
	// Aborted is the message of an abort asked of the Promotion ("": none).
	// No step runs after it: a step in flight is waited for (it may end
	// Aborted, or as it ended before the abort reached it), then the
	// Promotion ends Aborted, unless every step has already ended.
	Aborted string
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
// When every step has a record, the promotion is Finished with FinalPhase;
// else, after an abort (Input.Aborted), it is Finished Aborted.
// An Aborted record ends the promotion Aborted at once (an abort is
// promotion-wide in Kargo: no later step runs, not even always() ones).
// Records that do not match the steps end it Errored.
func Decide(in Input) Decision {
	if d, ok := checkRecords(in); !ok {
		return d
	}
	done := normalize(in.Steps, in.Done)
	if len(done) == len(in.Steps) {
		return finished(FinalPhase(in.Steps, done))
	}
	if in.Aborted != "" {
		return finished(kargoapi.PromotionPhaseAborted, in.Aborted)
	}
	return decideStep(newStepScope(in, done))
}

// checkRecords reads the records decided so far. It reports false, with the
// decision to return, when they do not match the steps, when one is
// Aborted (the promotion ends Aborted) or Running (Waiting), or when one's
// status is unknown.
func checkRecords(in Input) (Decision, bool) {
	for i, r := range in.Done {
		if i >= len(in.Steps) {
			return finished(kargoapi.PromotionPhaseErrored,
				fmt.Sprintf("%d step records for %d steps", len(in.Done), len(in.Steps))), false
		}
		alias := in.Steps[i].GetAlias(i)
		if r.Alias != "" && r.Alias != alias {
			return finished(kargoapi.PromotionPhaseErrored,
				fmt.Sprintf("step record %d is for step %q, but step %d is %q", i, r.Alias, i, alias)), false
		}
		switch r.Status {
		case StepSucceeded, StepSkipped, StepFailed, StepErrored:
		case StepAborted:
			msg := r.Message
			if msg == "" {
				msg = fmt.Sprintf("step %q was aborted", alias)
			}
			return finished(kargoapi.PromotionPhaseAborted, msg), false
		case StepRunning:
			return Decision{Waiting: true, Index: i, Alias: alias}, false
		default:
			return finished(kargoapi.PromotionPhaseErrored,
				fmt.Sprintf("step %q has an unknown status %q", alias, r.Status)), false
		}
	}
	return Decision{}, true
}

// decideStep decides the next step, sc.step: skip it, error it, or run it.
func decideStep(sc *stepScope) Decision {
	d := Decision{Index: sc.index, Alias: sc.alias}
	errored := func(msg string) Decision {
		d.Errored, d.Error = true, msg
		return d
	}
	skip, reason, err := sc.skip()
	if err != nil {
		return errored(fmt.Sprintf("error checking if step %q should be skipped: %s", sc.alias, err))
	}
	if skip {
		d.Skip, d.SkipReason = true, reason
		return d
	}
	step := sc.step
	if step.Uses == "" {
		if step.Task != nil {
			return errored(fmt.Sprintf("step %q refers to task %q, which was not inflated", sc.alias, step.Task.Name))
		}
		return errored(fmt.Sprintf("step %q has no uses", sc.alias))
	}
	cfg, err := sc.config()
	if err != nil {
		return errored(fmt.Sprintf("an unrecoverable error occurred: failed to get step config: %s", err))
	}
	d.Run = true
	d.Uses = step.Uses
	d.Config = cfg
	d.Retries = Retries(step)
	d.Timeout = Timeout(step)
	return d
}

// stepScope is what the expressions of the next step see: the step, its
// alias, the records before it, and its environment, evaluated at most
// once and only when something uses it (as in Kargo, a step with neither
// `if` nor config never evaluates its vars).
type stepScope struct {
	in    Input
	index int
	step  kargoapi.PromotionStep
	alias string
	done  []StepRecord
	fns   []expr.Option // success(), failure(), always(), status(), and freight's
	fopts []expr.Option // the freight functions (vars see these only, as in Kargo)
	env   map[string]any
}

func newStepScope(in Input, done []StepRecord) *stepScope {
	i := len(done)
	step := in.Steps[i]
	alias := step.GetAlias(i)
	fopts := FreightFunctions(in.Freight)
	return &stepScope{in: in, index: i, step: step, alias: alias, done: done,
		fns: append(statusFunctions(alias, in.Steps, done), fopts...), fopts: fopts}
}

// environment is StepEnv with the step's vars.
func (sc *stepScope) environment() (map[string]any, error) {
	if sc.env != nil {
		return sc.env, nil
	}
	vars, err := StepVars(sc.in.Vars, sc.step, sc.alias, sc.in.Ctx, sc.done, sc.fopts...)
	if err != nil {
		return nil, err
	}
	sc.env = StepEnv(sc.in.Ctx, sc.alias, vars, sc.done)
	return sc.env, nil
}

// skip reports whether the step is skipped, and why. Without `if` it is
// when an earlier step failed (HasFailures); with one, when the `if` is
// false. An `if` that does not evaluate to a bool is an error.
func (sc *stepScope) skip() (bool, string, error) {
	if sc.step.If == "" {
		if HasFailures(sc.in.Steps, sc.done) {
			return true, "skipped because an earlier step failed or errored", nil
		}
		return false, "", nil
	}
	env, err := sc.environment()
	if err != nil {
		return false, "", err
	}
	v, err := EvaluateTemplate(sc.step.If, env, sc.fns...)
	if err != nil {
		return false, "", err
	}
	run, ok := v.(bool)
	if !ok {
		return false, "", fmt.Errorf("expression must evaluate to a boolean")
	}
	if !run {
		return true, fmt.Sprintf("skipped because %q evaluated to false", sc.step.If), nil
	}
	return false, "", nil
}

// config is the step's config evaluated (EvaluateConfig), nil without one.
func (sc *stepScope) config() (map[string]any, error) {
	if sc.step.Config == nil || len(sc.step.Config.Raw) == 0 {
		return nil, nil
	}
	env, err := sc.environment()
	if err != nil {
		return nil, err
	}
	return EvaluateConfig(sc.step.Config.Raw, env, sc.fns...)
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
