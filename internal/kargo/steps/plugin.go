package steps

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/tracing"
)

// Promotions finds the Promotion a step's action belongs to.
type Promotions interface {
	// OfRun is the Promotion whose run is run in project, nil if none.
	OfRun(project, run string) *kargoapi.Promotion
}

// Stages reads Stages (the target Stage's Freight requests).
type Stages interface {
	Get(namespace, name string) (*kargoapi.Stage, error)
}

// Plugin runs one kind of step as an executor plugin. A round runs the
// step to its end (steps are short: a clone, a render, a push) in the
// executor's worker; Abort cancels it. The outcome is written to the
// action's output directory (result.go) before it is reported, so a
// repeated round, or one after a restart, reports it again without
// running the step twice.
type Plugin struct {
	runner     Runner
	promotions Promotions
	stages     Stages
	dirs       Dirs

	inflight plugins.Inflight
}

func newPlugin(r Runner, cfg Config) *Plugin {
	return &Plugin{runner: r, promotions: cfg.Promotions, stages: cfg.Stages, dirs: cfg.Dirs}
}

// Handle runs the step (once per attempt).
func (p *Plugin) Handle(ctx context.Context, tc *plugins.TaskContext) (plugins.Transition, error) {
	if o, err := ReadOutcome(tc.OutputDir); err != nil {
		return plugins.Transition{}, err
	} else if o != nil && o.Attempt == tc.Attempt {
		return transitionOf(*o), nil
	}
	sc, err := p.stepContext(tc)
	if err != nil {
		return plugins.Transition{Phase: plugins.PhasePermanentFailure, Info: "NotAPromotionStep",
			Error: &plugins.ExecutionError{Code: "NotAPromotionStep", Message: err.Error()}}, nil
	}
	runCtx, done := p.inflight.Start(ctx, tc)
	defer done()
	// The step's work, under its attempt's span when that is traced.
	runCtx, span := tracing.Start(runCtx, "step "+p.runner.Name(), trace.WithAttributes(
		attribute.String("kargo.step", p.runner.Name()), attribute.String("kargo.step.alias", sc.Alias),
		attribute.String("kargo.promotion", sc.Promotion), attribute.String("kargo.stage", sc.Stage)))
	res, err := p.run(runCtx, sc)
	span.SetAttributes(attribute.String("kargo.step.status", string(res.Status)))
	tracing.End(span, err)
	if ctx.Err() != nil {
		// The executor is stopping: not the step's end. A later round
		// (after the restart) runs it again.
		return plugins.Transition{Phase: plugins.PhaseRunning, Info: "interrupted", RequeueAfter: time.Second}, nil
	}
	o := outcomeOf(tc.Attempt, sc.Alias, res, err)
	if o.Status == kargoapi.PromotionStepStatusRunning {
		return transitionOf(o), nil
	}
	if err := writeOutcome(tc.OutputDir, o); err != nil {
		return plugins.Transition{}, fmt.Errorf("write the step's outcome: %w", err)
	}
	return transitionOf(o), nil
}

// run runs the runner, a panic being Kargo's terminal "step panicked".
func (p *Plugin) run(ctx context.Context, sc *StepContext) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = Result{Status: kargoapi.PromotionStepStatusErrored}, &TerminalError{Err: fmt.Errorf("step %q panicked: %v", sc.Alias, r)}
		}
	}()
	return p.runner.Run(ctx, sc)
}

// stepContext is the step's context from its Promotion. The Gate has
// held every round of the action until the orchestrator decided it, so
// what it checks fails here only for an action the executor ran without
// the gate: it runs nothing.
func (p *Plugin) stepContext(tc *plugins.TaskContext) (*StepContext, error) {
	if tc.Domain != promotions.Domain {
		return nil, fmt.Errorf("a %s step runs only as a step of a Promotion (domain %q), not in domain %q", p.runner.Name(), promotions.Domain, tc.Domain)
	}
	promo, i, err := decidedStep(p.promotions, tc)
	if err != nil {
		return nil, err
	}
	step := promo.Spec.Steps[i]
	if step.Uses != p.runner.Name() {
		return nil, fmt.Errorf("step %d of Promotion %s uses %q, not %q", i+1, promo.Name, step.Uses, p.runner.Name())
	}
	work, git, err := p.dirs.open(tc.Project, tc.Run)
	if err != nil {
		return nil, fmt.Errorf("the Promotion's working directory: %w", err)
	}
	sc := &StepContext{
		WorkDir: work, GitHome: git, Alias: step.GetAlias(i), Config: tc.Template.Custom,
		Project: promo.Namespace, Stage: promo.Spec.Stage, Promotion: promo.Name,
		PromotionActor: promo.Annotations[kargoapi.AnnotationKeyCreateActor],
	}
	if fc := promo.Status.FreightCollection; fc != nil {
		sc.Freight = *fc.DeepCopy()
	}
	if f := promo.Status.Freight; f != nil {
		sc.TargetFreightRef = *f.DeepCopy()
	}
	if st, err := p.stages.Get(promo.Namespace, promo.Spec.Stage); err == nil && st != nil {
		sc.FreightRequests = st.Spec.RequestedFreight
	}
	return sc, nil
}

// outcomeOf is a runner's result as Kargo's engine reads it: an error is
// the step Errored with `error running step "<alias>": <error>`
// (terminal when it wraps a TerminalError); a nil error keeps the
// runner's status (Errored without an error is "step %q errored").
func outcomeOf(attempt uint32, alias string, res Result, err error) Outcome {
	o := Outcome{Attempt: attempt, Status: res.Status, Message: res.Message, Output: res.Output}
	switch {
	case err != nil:
		if o.Status != kargoapi.PromotionStepStatusFailed {
			o.Status = kargoapi.PromotionStepStatusErrored
		}
		o.Message, o.Terminal = fmt.Sprintf("error running step %q: %s", alias, err), IsTerminal(err)
	case o.Status == kargoapi.PromotionStepStatusErrored || o.Status == kargoapi.PromotionStepStatusFailed:
		msg := o.Message
		if msg == "" {
			msg = "no details provided"
		}
		o.Message = fmt.Sprintf("step %q errored: %s", alias, msg)
	case o.Status == "":
		o.Status = kargoapi.PromotionStepStatusSucceeded
	}
	return o
}

// transitionOf is the plugin transition of an outcome: success, a failure
// the action's retries may retry (Kargo's errorThreshold), or one they
// may not (a TerminalError).
func transitionOf(o Outcome) plugins.Transition {
	switch o.Status {
	case kargoapi.PromotionStepStatusSucceeded, kargoapi.PromotionStepStatusSkipped:
		return plugins.Transition{Phase: plugins.PhaseSuccess, Info: string(o.Status), Outputs: outputsOf(o.Output)}
	case kargoapi.PromotionStepStatusRunning:
		return plugins.Transition{Phase: plugins.PhaseRunning, Info: o.Message, RequeueAfter: 10 * time.Second}
	}
	phase, code := plugins.PhaseRetryableFailure, string(o.Status)
	if o.Terminal {
		phase, code = plugins.PhasePermanentFailure, "Terminal"
	}
	return plugins.Transition{Phase: phase, Info: code, Error: &plugins.ExecutionError{Code: code, Message: o.Message}}
}

// outputsOf is what outputs.json gets: nil (no file) for no outputs.
func outputsOf(out map[string]any) any {
	if out == nil {
		return nil
	}
	return out
}

// Abort cancels the attempt's run.
func (p *Plugin) Abort(_ context.Context, tc *plugins.TaskContext) error {
	p.inflight.Abort(tc)
	return nil
}

// Finalize has nothing to release (the working directory is the
// Promotion's, removed when it ends).
func (p *Plugin) Finalize(context.Context, *plugins.TaskContext) error { return nil }
