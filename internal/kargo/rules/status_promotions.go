package rules

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// Reasons and messages of syncPromotions.
const (
	ReasonActivePromotion        = "ActivePromotion"
	ReasonWaitingForHealthCheck  = "WaitingForHealthCheck"
	ReasonWaitingForVerification = "WaitingForVerification"

	MsgActivePromotionFmt     = "Promotion %q is currently %s"
	MsgWaitingForHealthCheck  = "Waiting for health check to be performed after successful promotion"
	MsgWaitingForVerification = "Waiting for verification to be performed after successful promotion"
)

// syncPromotions is Kargo's RegularStageReconciler.syncPromotions (v1.6.4)
// over in.promotions (sorted). st is the Stage's status at the start of
// the reconciliation (syncPromotions runs first).
func syncPromotions(s *kargoapi.Stage, in stageInputs, st kargoapi.StageStatus, now metav1.Time) kargoapi.StageStatus {
	promos := in.promotions
	// No Promotions: not promoting.
	if len(promos) == 0 {
		meta.RemoveStatusCondition(&st.Conditions, kargoapi.ConditionTypePromoting)
		st.CurrentPromotion = nil
		return st
	}
	highest := promos[0]

	// The current Promotion is no longer the highest-priority one, or that
	// one is terminal: the current Promotion has finished.
	if cur := st.CurrentPromotion; cur != nil && (cur.Name != highest.Name || highest.Status.Phase.IsTerminal()) {
		meta.RemoveStatusCondition(&st.Conditions, kargoapi.ConditionTypePromoting)
		st.CurrentPromotion = nil
		for _, p := range terminatedSince(promos, st.LastPromotion) {
			recordLastPromotion(s, &st, p, now)
		}
		return st
	}

	if !queueHeld(&st) && !highest.Status.Phase.IsTerminal() {
		startPromotion(s, &st, highest, now)
		return st
	}
	meta.RemoveStatusCondition(&st.Conditions, kargoapi.ConditionTypePromoting)
	return st
}

// terminatedSince returns the Promotions among promos (sorted) that
// terminated since last, the last one recorded, oldest first so that the
// Freight history keeps the newest. Names embed a ULID, so they order by
// creation; terminal ones come newest first in promos.
func terminatedSince(promos []*kargoapi.Promotion, last *kargoapi.PromotionReference) []kargoapi.PromotionReference {
	var out []kargoapi.PromotionReference
	for _, p := range promos {
		if last != nil && strings.Compare(p.Name, last.Name) <= 0 {
			break
		}
		if p.Status.Phase.IsTerminal() {
			info := kargoapi.PromotionReference{
				Name:       p.Name,
				Status:     p.Status.DeepCopy(),
				FinishedAt: p.Status.FinishedAt.DeepCopy(),
			}
			if p.Status.Freight != nil {
				info.Freight = p.Status.Freight.DeepCopy()
			}
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b kargoapi.PromotionReference) int {
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// recordLastPromotion makes p the Stage's last Promotion. A Succeeded one
// pushes its Freight collection onto the Freight history, and health and
// verification start again.
func recordLastPromotion(s *kargoapi.Stage, st *kargoapi.StageStatus, p kargoapi.PromotionReference, now metav1.Time) {
	st.LastPromotion = &p
	if p.Status.Phase != kargoapi.PromotionPhaseSucceeded {
		return
	}
	st.FreightHistory.Record(p.Status.FreightCollection)
	st.Health = nil
	setCondition(st, metav1.Condition{
		Type: kargoapi.ConditionTypeHealthy, Status: metav1.ConditionUnknown,
		Reason: ReasonWaitingForHealthCheck, Message: MsgWaitingForHealthCheck, ObservedGeneration: s.Generation,
	}, now)
	setCondition(st, metav1.Condition{
		Type: kargoapi.ConditionTypeVerified, Status: metav1.ConditionUnknown,
		Reason: ReasonWaitingForVerification, Message: MsgWaitingForVerification, ObservedGeneration: s.Generation,
	}, now)
}

// queueHeld reports whether the current Freight awaits its verification,
// which holds the queue: a non-terminal one, or (healthy or health not
// assessed) none terminal yet. An unhealthy Stage or a failed verification
// lets the next Promotion start, since it may fix the Stage.
func queueHeld(st *kargoapi.StageStatus) bool {
	cur := st.FreightHistory.Current()
	if cur == nil {
		return false
	}
	if cur.HasNonTerminalVerification() {
		return true
	}
	if st.Health == nil || st.Health.Status == kargoapi.HealthStateHealthy {
		vi := cur.VerificationHistory.Current()
		return vi == nil || !vi.Phase.IsTerminal()
	}
	return false
}

// startPromotion makes p, non-terminal, the Stage's current Promotion.
func startPromotion(s *kargoapi.Stage, st *kargoapi.StageStatus, p *kargoapi.Promotion, now metav1.Time) {
	setCondition(st, metav1.Condition{
		Type: kargoapi.ConditionTypePromoting, Status: metav1.ConditionTrue, Reason: ReasonActivePromotion,
		Message:            fmt.Sprintf(MsgActivePromotionFmt, p.Name, p.Status.Phase),
		ObservedGeneration: s.Generation,
	}, now)
	st.CurrentPromotion = &kargoapi.PromotionReference{Name: p.Name}
	if f := p.Status.Freight; f != nil {
		st.CurrentPromotion.Freight = f.DeepCopy()
	}
}
