package orchestrator

import (
	"context"
	"errors"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/pipeline"
)

// A Promotion's steps share a working directory on the disk of the replica
// that runs them (the executor's, beside which the orchestrator runs).
// Kargo's controller makes it at every reconciliation, and when it made it
// afresh, the Promotion starts over from its first step: what earlier
// steps left there (a clone, rendered manifests) is gone, and the steps
// after them would fail on its absence, or worse, push a partial result.
// The same happens here when the replica that ran the steps is gone (a
// failover to a replica with a disk of its own) or its disk was wiped.

// workDirPoll is how often a running Promotion's working directory is
// looked for without an event, well within the Gate's patience with a
// step held for want of it.
const workDirPoll = 10 * time.Second

// startOverReason is the abort reason of a step in flight when its
// Promotion starts over.
const startOverReason = "the Promotion's working directory is gone from the replica that runs its steps: the Promotion starts over from its first step"

// workDir makes sure the working directory of a Promotion about to run a
// step is on this disk: made before its first step; when it is missing
// although steps have run, the Promotion starts over instead (true), and
// the next round, brought by the status write, makes it.
func (o *Orchestrator) workDir(ctx context.Context, p *kargoapi.Promotion) (startedOver bool, err error) {
	if o.cfg.WorkDirs == nil {
		return false, nil
	}
	r := promotions.RunOf(p)
	ok, err := o.cfg.WorkDirs.Exists(r.Project, r.Run)
	switch {
	case err != nil || ok:
		return false, err
	case len(p.Status.StepExecutionMetadata) > 0:
		return true, o.startOver(ctx, p)
	}
	return false, o.cfg.WorkDirs.Make(r.Project, r.Run)
}

// startOver starts a Promotion's steps over from the first, as Kargo's
// controller does: their records go (step metadata, current step, health
// checks), and status.state stays, so that a step can find what it did
// before. The new start's steps are new actions (promotions.StepAction):
// an action runs once, and the earlier start's stay as they ended.
//
// The step in flight is aborted first, then the start raised, then the
// records cleared. The directory is made only after all three, so a
// restart between any two finds it missing and does what is left: a
// start raised twice skips a number, nothing worse.
func (o *Orchestrator) startOver(ctx context.Context, p *kargoapi.Promotion) error {
	if err := o.abortStepInFlight(ctx, p); err != nil {
		return err
	}
	start := promotions.StartOf(p) + 1
	next, err := o.cfg.Promotions.SetStart(ctx, p, start)
	if errors.Is(err, pipeline.ErrConflict) || errors.Is(err, pipeline.ErrNotFound) {
		return nil // a newer version is on its way, whose event brings it back
	}
	if err != nil {
		return err
	}
	o.cfg.Log.Warn().Str("project", p.Namespace).Str("promotion", p.Name).Int("start", start).
		Msg("the Promotion's working directory is gone: start it over from its first step")
	next = next.DeepCopy()
	next.Status.CurrentStep, next.Status.StepExecutionMetadata, next.Status.HealthChecks = 0, nil, nil
	_, err = o.writeStatus(ctx, next)
	return err
}

// abortStepInFlight aborts the action of the step p's records leave
// Running, unless it has ended or was never enqueued.
func (o *Orchestrator) abortStepInFlight(ctx context.Context, p *kargoapi.Promotion) error {
	md := p.Status.StepExecutionMetadata
	n := len(md)
	if n == 0 || md[n-1].Status != kargoapi.PromotionStepStatusRunning {
		return nil
	}
	id := o.stepID(p, n-1)
	ta, err := o.cfg.Actions.GetTaskAction(ctx, id)
	switch {
	case errors.Is(err, pipeline.ErrNotFound):
		return nil // never enqueued, or ended and gone
	case err != nil:
		return err
	case v1.PhaseOfAction(ta).Terminal():
		return nil
	}
	if _, err := o.cfg.Actions.AbortAction(ctx, id, startOverReason); err != nil && !errors.Is(err, pipeline.ErrNotFound) {
		return err
	}
	return nil
}
