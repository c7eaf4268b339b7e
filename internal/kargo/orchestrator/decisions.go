package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/kargo/engine"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/kargo/steps"
	"taskactions/internal/pipeline"
	"taskactions/internal/taskactions"
)

// What the orchestrator decides, as pure functions; orchestrator.go does
// the reading and writing around them.

// round is what one reconciliation does with a Promotion.
type round int

const (
	roundWait    round = iota // terminal, or queued behind another: nothing
	roundNoStage              // its Stage is gone: it ends Errored
	roundAccept               // new: Pending, with its Freight
	roundAbort                // asked to stop
	roundRun                  // the Stage's current Promotion: start or advance its run
)

// roundOf decides what to do with p, whose Stage is st (nil when there is
// none). Only the Promotion the Stage names currentPromotion runs (the
// Stage controller keeps Kargo's queue); an abort or a new Promotion is
// handled whatever the queue.
func roundOf(p *kargoapi.Promotion, st *kargoapi.Stage) round {
	switch {
	case p.Status.Phase.IsTerminal():
		return roundWait
	case st == nil:
		return roundNoStage
	case p.Status.Phase == "":
		return roundAccept
	}
	if _, abort := p.Annotations[kargoapi.AnnotationKeyAbort]; abort {
		return roundAbort
	}
	if cur := st.Status.CurrentPromotion; cur == nil || cur.Name != p.Name {
		return roundWait // queued behind another, or the Stage is not ready for it
	}
	return roundRun
}

// collectionAfter is the Freight collection a Promotion of ref leaves st
// with: the current one, with ref in place of the Freight of its origin.
func collectionAfter(st *kargoapi.Stage, ref kargoapi.FreightReference) *kargoapi.FreightCollection {
	fc := &kargoapi.FreightCollection{}
	if cur := st.Status.FreightHistory.Current(); cur != nil {
		fc.UpdateOrPush(cur.References()...)
	}
	fc.UpdateOrPush(ref)
	return fc
}

// contextOf is what a Promotion's expressions see as ctx.
func contextOf(p *kargoapi.Promotion) engine.Context {
	c := engine.Context{Project: p.Namespace, Promotion: p.Name, Stage: p.Spec.Stage,
		Actor: p.Annotations[kargoapi.AnnotationKeyCreateActor]}
	c.TargetFreight.Name = p.Spec.Freight
	if f := p.Status.Freight; f != nil {
		c.TargetFreight.Origin = f.Origin
	}
	return c
}

// recordOf is the record of decision d, at now: Skipped or Errored (also
// a step to run whose `uses` runnable says no plugin runs), or Running for
// a step to enqueue. Waiting and Finished decisions record nothing (false).
func recordOf(d engine.Decision, runnable func(taskType string) bool, now time.Time) (engine.StepRecord, bool) {
	r := engine.StepRecord{Alias: d.Alias, StartedAt: &now, FinishedAt: &now}
	switch {
	case d.Skip:
		r.Status, r.Message = kargoapi.PromotionStepStatusSkipped, d.SkipReason
	case d.Errored:
		r.Status, r.Message = kargoapi.PromotionStepStatusErrored, d.Error
	case d.Run && runnable != nil && !runnable(d.Uses):
		r.Status, r.Message = kargoapi.PromotionStepStatusErrored, fmt.Sprintf("no promotion step runner found for kind %q", d.Uses)
	case d.Run:
		r.Status, r.FinishedAt = kargoapi.PromotionStepStatusRunning, nil
	default:
		return engine.StepRecord{}, false
	}
	return r, true
}

// stepEnd is r, the record of step, once its action a is terminal (false
// while it is not), at now: the status and message engine.StepStatusOf
// gives the action's phase and error (an aborted one's reason), and as
// Kargo's errorCount the consecutive failed attempts (each attempt after
// the first follows a failure; a success resets it). The outputs of a
// step that succeeded are the caller's to read.
func stepEnd(step kargoapi.PromotionStep, r engine.StepRecord, a *taskactions.Action, now time.Time) (engine.StepRecord, bool) {
	phase := a.Phase
	if !phase.Terminal() {
		return r, false
	}
	var msg string
	if es := a.ErrorState; es != nil {
		msg = es.Message
	}
	if phase == v1.PhaseAborted {
		msg = a.AbortReason
	}
	r.Status, r.Message = engine.StepStatusOf(string(phase), a.Attempts, step, r.Alias, msg)
	r.ErrorCount = a.Attempts
	if phase == v1.PhaseSucceeded {
		r.ErrorCount = 0
	}
	r.FinishedAt = &now
	return r, true
}

// runEnd is the status update that ends the run of a Promotion that ended
// in phase with msg; none (false) for an aborted one, whose run the abort
// ended.
func runEnd(phase kargoapi.PromotionPhase, msg string) (taskactions.StatusUpdate, bool) {
	switch phase {
	case kargoapi.PromotionPhaseSucceeded:
		return taskactions.StatusUpdate{Phase: v1.PhaseSucceeded}, true
	case kargoapi.PromotionPhaseAborted:
		return taskactions.StatusUpdate{}, false
	default:
		return taskactions.StatusUpdate{Phase: v1.PhaseFailed, Error: &v1.ErrorState{Kind: v1.ErrorKindUser, Message: msg}}, true
	}
}

// rootTemplate is the task template of a Promotion's root action, whose
// status the orchestrator reports (no plugin claims its type).
func rootTemplate(p *kargoapi.Promotion) []byte {
	tmpl, _ := json.Marshal(map[string]any{"type": promotions.RootTaskType, "custom": map[string]any{"promotion": p.Name, "stage": p.Spec.Stage}})
	return tmpl
}

// rootPromotion is the name of the Promotion a rootTemplate names; ""
// when it names none.
func rootPromotion(tmpl []byte) string {
	var t struct {
		Custom struct {
			Promotion string `json:"promotion"`
		} `json:"custom"`
	}
	if json.Unmarshal(tmpl, &t) != nil {
		return ""
	}
	return t.Custom.Promotion
}

// stepTemplate is the task template of the action of a step decided to
// run: its type the step's uses, its custom part the evaluated config,
// Kargo's retry as the action's retries and per-attempt timeout.
func stepTemplate(d engine.Decision) ([]byte, error) {
	meta := map[string]any{"retries": d.Retries}
	if d.Timeout > 0 {
		meta["timeout"] = d.Timeout.String()
	}
	return json.Marshal(map[string]any{"type": d.Uses, "metadata": meta, "custom": d.Config})
}

// unrunnable: the action cannot be stored as asked (too large a config,
// a field the schema refuses); retrying would not change that.
func unrunnable(err error) bool {
	return errors.Is(err, pipeline.ErrInvalid) || errors.Is(err, pipeline.ErrTooLarge)
}

// runnerEnd is r, the record of step whose action ended in phase after
// attempts attempts, refined by what its runner said (o, nil for a step
// no built-in runner ran, or from another attempt): Kargo's Skipped for
// a success that did nothing, and for an error Kargo's engine's words
// (simple_engine.go): "an unrecoverable error occurred: <message>" when
// retrying could not help, else "step %q met error threshold of %d:
// <message>", both Errored.
func runnerEnd(step kargoapi.PromotionStep, r engine.StepRecord, phase v1.Phase, attempts uint32, o *steps.Outcome) engine.StepRecord {
	if o == nil || o.Attempt != max(attempts, 1) {
		return r
	}
	switch {
	case phase == v1.PhaseSucceeded && o.Status == kargoapi.PromotionStepStatusSkipped:
		r.Status = kargoapi.PromotionStepStatusSkipped
	case phase == v1.PhaseFailed && o.Terminal:
		r.Status, r.Message = kargoapi.PromotionStepStatusErrored, "an unrecoverable error occurred: "+o.Message
	case phase == v1.PhaseFailed && (o.Status == kargoapi.PromotionStepStatusErrored || o.Status == kargoapi.PromotionStepStatusFailed):
		r.Status = kargoapi.PromotionStepStatusErrored
		r.Message = fmt.Sprintf("step %q met error threshold of %d: %s", r.Alias, engine.ErrorThreshold(step), o.Message)
	}
	return r
}
