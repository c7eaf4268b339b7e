package orchestrator

import (
	"context"
	"errors"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/pipeline"
	"taskactions/internal/taskactions"
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

// dirStep is what a round does about a running Promotion's working
// directory before it decides steps.
type dirStep int

const (
	dirGo        dirStep = iota // it is there: on to the steps
	dirMake                     // make it, then on to the steps
	dirCount                    // make it, then count the first start (the round ends)
	dirStartOver                // start the Promotion over (the round ends)
)

// dirStepOf decides dirStep for a Promotion whose steps have run (some
// recorded) or not, whose starts are counted (its StartAnnotation is set)
// or not, with its directory there or not; underWay: the step in flight
// was aborted by a start over that has yet to finish.
//
// The first round of a Promotion counts its first start: a Promotion
// whose starts are not counted but whose steps have run began under a
// server that did not count them, whose steps made the directory as they
// needed it, so one missing then is no sign of a lost one.
func dirStepOf(stepsRan, counted, there, underWay bool) dirStep {
	switch {
	case !stepsRan && !counted:
		return dirCount
	case !stepsRan && !there, stepsRan && !there && !counted:
		return dirMake
	case stepsRan && (!there || underWay):
		return dirStartOver
	}
	return dirGo
}

// workDir makes sure the working directory of a Promotion about to run a
// step is on this disk, and starts the Promotion over when it is gone
// after steps ran. done: the round ends here, the event of its write (or
// of the aborted step's end) brings the Promotion back.
func (o *Orchestrator) workDir(ctx context.Context, p *kargoapi.Promotion) (done bool, err error) {
	if o.cfg.WorkDirs == nil {
		return false, nil
	}
	r := promotions.RunOf(p)
	there, err := o.cfg.WorkDirs.Exists(r.Project, r.Run)
	if err != nil {
		return false, err
	}
	_, counted := p.Annotations[promotions.StartAnnotation]
	stepsRan := len(p.Status.StepExecutionMetadata) > 0
	var underWay bool
	if stepsRan && there && counted {
		if underWay, err = o.startingOver(ctx, p); err != nil {
			return false, err
		}
	}
	switch dirStepOf(stepsRan, counted, there, underWay) {
	case dirMake:
		return false, o.cfg.WorkDirs.Make(r.Project, r.Run)
	case dirCount:
		if err := o.cfg.WorkDirs.Make(r.Project, r.Run); err != nil {
			return false, err
		}
		return true, o.setStart(ctx, p, 1)
	case dirStartOver:
		return true, o.startOver(ctx, p)
	}
	return false, nil
}

// startOver starts a Promotion's steps over from the first, as Kargo's
// controller does: their records go (step metadata, current step, health
// checks), and status.state stays, so that a step can find what it did
// before. The new start's steps are new actions (promotions.StepAction):
// an action runs once, and the earlier start's stay as they ended.
//
// The step in flight is aborted first, and nothing more happens until it
// has ended (its end brings the Promotion back, its abort reason saying
// that a start over is under way): its command may still be writing.
// Then what is left of the directory goes, the start is raised, and the
// records are cleared; the next round makes the directory afresh. A
// restart between any two steps finds the directory missing and does what
// is left: a start raised twice skips a number, nothing worse.
func (o *Orchestrator) startOver(ctx context.Context, p *kargoapi.Promotion) error {
	if ended, err := o.endStepInFlight(ctx, p); err != nil || !ended {
		return err
	}
	r := promotions.RunOf(p)
	if err := o.cfg.WorkDirs.Remove(r.Project, r.Run); err != nil {
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

// setStart records p's start; a conflict writes nothing (a newer version
// is on its way, whose event brings the Promotion back): nil, nil.
func (o *Orchestrator) setStart(ctx context.Context, p *kargoapi.Promotion, start int) error {
	_, err := o.cfg.Promotions.SetStart(ctx, p, start)
	if errors.Is(err, pipeline.ErrConflict) || errors.Is(err, pipeline.ErrNotFound) {
		return nil
	}
	return err
}

// inFlight is the action of the step p's records leave Running: nil when
// there is none, or it was never enqueued.
func (o *Orchestrator) inFlight(ctx context.Context, p *kargoapi.Promotion) (*taskactions.Action, taskactions.ActionID, error) {
	md := p.Status.StepExecutionMetadata
	n := len(md)
	if n == 0 || md[n-1].Status != kargoapi.PromotionStepStatusRunning {
		return nil, taskactions.ActionID{}, nil
	}
	id := o.stepID(p, n-1)
	a, err := o.step(ctx, id)
	if errors.Is(err, pipeline.ErrNotFound) {
		return nil, id, nil
	}
	return a, id, err
}

// startingOver: a start over of p is under way, its step in flight
// aborted for it.
func (o *Orchestrator) startingOver(ctx context.Context, p *kargoapi.Promotion) (bool, error) {
	a, _, err := o.inFlight(ctx, p)
	if a == nil || err != nil {
		return false, err
	}
	return a.AbortReason == startOverReason, nil
}

// endStepInFlight reports whether p has no step in flight that has not
// ended, asking for the abort of one that has not.
func (o *Orchestrator) endStepInFlight(ctx context.Context, p *kargoapi.Promotion) (ended bool, err error) {
	a, id, err := o.inFlight(ctx, p)
	switch {
	case err != nil:
		return false, err
	case a == nil || a.Phase.Terminal():
		return true, nil
	}
	if _, err := o.cfg.Actions.AbortAction(ctx, id, startOverReason); err != nil && !errors.Is(err, pipeline.ErrNotFound) {
		return false, err
	}
	return false, nil
}
