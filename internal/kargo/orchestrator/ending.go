package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/pipeline"
)

// How a Promotion ends outside its steps' decisions: an abort, or an end
// the orchestrator declares (no Stage, no Freight, a run it cannot start).

// abortMessage is an aborted Promotion's message, and its run's abort
// reason.
const abortMessage = "Promotion aborted"

// abort ends a Promotion that was asked to stop. Its run is aborted: a
// step in flight ends Aborted, or as it ended before the abort reached
// it. The round records that end, and no step runs after it
// (engine.Input.Aborted): the Promotion ends Aborted, a waiting one at
// once.
func (o *Orchestrator) abort(ctx context.Context, p *kargoapi.Promotion) error {
	if err := o.abortRun(ctx, p, abortMessage); err != nil {
		return err
	}
	return o.advance(ctx, p)
}

// abortRun aborts p's run with reason; a run never started is no error.
func (o *Orchestrator) abortRun(ctx context.Context, p *kargoapi.Promotion, reason string) error {
	if _, err := o.cfg.Actions.AbortAction(ctx, o.rootID(p), reason); err != nil && !errors.Is(err, pipeline.ErrNotFound) {
		return err
	}
	return nil
}

// gone aborts the run of a Promotion deleted before it ended (kubectl
// delete; the API has no such operation): its step in flight would
// otherwise run on, and its run stay RUNNING, for a Promotion no one can
// see. The store is asked, not the cache, since the cache may not have
// heard of a Promotion whose run it already has. The working directory
// goes last, once no step works in it.
func (o *Orchestrator) gone(ctx context.Context, ns, name string) error {
	p := &kargoapi.Promotion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	root, err := o.cfg.Actions.GetTaskAction(ctx, o.rootID(p))
	switch {
	case errors.Is(err, pipeline.ErrNotFound):
		// Never started, or ended and retired.
	case err != nil:
		return err
	case !v1.PhaseOfAction(root).Terminal():
		stored, err := o.cfg.Promotions.Stored(ctx, ns, name)
		if err != nil || stored != nil {
			return err // there after all: its event brings it back
		}
		o.cfg.Log.Info().Str("project", ns).Str("promotion", name).Msg("abort the run of a deleted Promotion")
		if err := o.abortRun(ctx, p, fmt.Sprintf("Promotion %q was deleted", name)); err != nil {
			return err
		}
	}
	o.removeWorkDir(p)
	return nil
}

// orphanedRun reports the key of the Promotion of a run's root action when
// the run has not ended and the cache has no such Promotion: deleted while
// no leader was there to hear it, or not yet heard of (gone tells them
// apart).
func (o *Orchestrator) orphanedRun(ta *v1.TaskAction) (string, bool) {
	if ta.Spec.Domain != promotions.Domain || ta.Spec.ActionName != promotions.RootAction || v1.PhaseOfAction(ta).Terminal() {
		return "", false
	}
	if o.promotionOf(ta) != nil {
		return "", false
	}
	name := rootPromotion(ta.Spec.TaskTemplate)
	if name == "" {
		return "", false
	}
	return ta.Spec.Project + "/" + name, true
}

// noStage ends a Promotion whose Stage is gone Errored, as Kargo does. Its
// run is aborted first: a step in flight would otherwise run on, for a
// Stage that no longer exists.
func (o *Orchestrator) noStage(ctx context.Context, p *kargoapi.Promotion) error {
	msg := fmt.Sprintf("Stage %q not found", p.Spec.Stage)
	if p.Status.Phase == kargoapi.PromotionPhaseRunning {
		if err := o.abortRun(ctx, p, msg); err != nil {
			return err
		}
	}
	return o.finish(ctx, p, kargoapi.PromotionPhaseErrored, msg)
}

// finish ends the Promotion and its run's root action.
func (o *Orchestrator) finish(ctx context.Context, p *kargoapi.Promotion, phase kargoapi.PromotionPhase, msg string) error {
	if err := o.finishRun(ctx, p, phase, msg); err != nil {
		return err
	}
	err := o.updateStatus(ctx, p, func(s *kargoapi.PromotionStatus) {
		s.Phase, s.Message = phase, msg
		s.FinishedAt = &metav1.Time{Time: time.Now()}
	})
	if err == nil && o.cfg.Finished != nil {
		o.cfg.Finished(phase)
	}
	return err
}

// finishRun reports the end of a Promotion on its run's root action (an
// aborted one was ended by the abort). It is written before the
// Promotion's phase: a restart in between ends the run again, as a no-op.
func (o *Orchestrator) finishRun(ctx context.Context, p *kargoapi.Promotion, phase kargoapi.PromotionPhase, msg string) error {
	update, ok := runEnd(phase, msg)
	if !ok {
		return nil
	}
	_, err := o.cfg.Actions.PutStatus(ctx, o.rootID(p), 1, update)
	if errors.Is(err, pipeline.ErrNotFound) || errors.Is(err, pipeline.ErrConflict) {
		return nil // never started, or already ended
	}
	return err
}
