package rules

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// Reasons and messages of the Stage controller (Kargo v1.6.3
// internal/controller/stages/{regular,control_flow}_stages.go).
const (
	ReasonReconciling         = "Reconciling"
	ReasonNoFreight           = "NoFreight"
	ReasonUnhealthy           = "Unhealthy"
	ReasonPendingVerification = "PendingVerification"
	ReasonVerified            = "Verified"

	MsgNoFreight              = "Stage has no current Freight"
	MsgNoFreightToVerify      = "Stage has no current Freight to verify"
	MsgNotHealthy             = "Stage is not healthy"
	MsgNotVerified            = "Stage is not verified"
	MsgFreightVerified        = "Freight has been verified"
	MsgLastPromotionFailed    = "Cannot assess health because last Promotion did not succeed"
	MsgRolloutsDisabled       = "Rollouts integration is disabled on this controller: cannot start verification"
	msgRolloutsDisabledResult = "Rollouts integration is disabled on this controller: cannot get verification result"
	msgRolloutsDisabledAbort  = "Rollouts integration is disabled on this controller: cannot abort verification"
	msgNoHealthCheckerFmt     = "no health checker registered for health check kind %q"
	freightSummaryNotApplic   = "N/A"
)

// Reconcile computes the status the Stage controller would write for s at
// time now, and whether it differs from s.Status. It covers the states a
// Stage can be in without Promotions, Freight objects or AnalysisRuns:
//
//   - A control-flow Stage (no promotion steps) keeps only Ready and
//     Reconciling, is Ready=True/Ready, its freightSummary is "N/A" and its
//     observedGeneration follows metadata.generation.
//   - A regular Stage runs Kargo's sub-reconcilers in order (sync
//     Promotions, assess health, verify the current Freight), summarizing
//     the conditions after each: with no current Freight it is
//     Healthy=Unknown/NoFreight, Verified=Unknown/NoFreight and
//     Ready=False/NoFreight, with freightSummary "0/<n> Fulfilled", and
//     observedGeneration advances only when Ready becomes True.
//
// The refresh annotation's value is recorded in status.lastHandledRefresh.
// lastTransitionTime changes only when a condition's status does.
func Reconcile(s *kargoapi.Stage, now metav1.Time) (kargoapi.StageStatus, bool) {
	return ReconcileWithPromotions(s, nil, now)
}

// ReconcileWithPromotions is Reconcile for a Stage with Promotions: promos
// are the Promotions whose spec.stage names s (in any order; others are
// ignored). Kargo's syncPromotions reads them:
//
//   - The highest-priority non-terminal Promotion (Running first, else the
//     oldest by name, see ComparePromotionByPhaseAndCreationTime) becomes
//     status.currentPromotion {name, freight} with
//     Promoting=True/ActivePromotion "Promotion %q is currently %s", and
//     Ready follows Promoting. While the current Freight still awaits
//     verification (a non-terminal one, or none yet while the Stage is
//     Healthy or its health unknown), the queue is held: Promoting is
//     removed and no new Promotion becomes current.
//   - Once the current Promotion is terminal (or gone), every Promotion that
//     terminated since status.lastPromotion is recorded, oldest first, as
//     lastPromotion {name, freight, status, finishedAt}; a Succeeded one
//     pushes its status.freightCollection onto status.freightHistory (newest
//     first, at most 10), clears health and sets
//     Healthy=Unknown/WaitingForHealthCheck and
//     Verified=Unknown/WaitingForVerification. The health check and the
//     verification then run in the same pass: with no health checks and no
//     spec.verification the Stage ends Healthy, Verified and Ready.
//
// While a Promotion is not terminal the Reconciling condition stays (Kargo
// requeues at once).
func ReconcileWithPromotions(s *kargoapi.Stage, promos []*kargoapi.Promotion, now metav1.Time) (kargoapi.StageStatus, bool) {
	return ReconcileStage(s, Inputs{Promotions: promos}, now)
}

// Inputs are what a Stage's reconciliation reads besides the Stage.
type Inputs struct {
	// Promotions whose spec.stage names the Stage, in any order (others
	// are ignored).
	Promotions []*kargoapi.Promotion
	// Verifier starts and follows the Stage's verifications; nil when no
	// AnalysisRuns are served (Kargo's Rollouts integration disabled).
	Verifier Verifier
}

// ReconcileStage is ReconcileWithPromotions with every input: a Stage
// whose spec.verification names AnalysisTemplates is verified through
// in.Verifier (status_verification.go).
func ReconcileStage(s *kargoapi.Stage, in Inputs, now metav1.Time) (kargoapi.StageStatus, bool) {
	var st kargoapi.StageStatus
	if s.IsControlFlow() {
		st = reconcileControlFlow(s, now)
	} else {
		st = reconcileRegular(s, stageInputs{promotions: promotionsOf(s, in.Promotions), verifier: in.Verifier}, now)
	}
	if token, ok := s.Annotations[kargoapi.AnnotationKeyRefresh]; ok {
		st.LastHandledRefresh = token
	}
	return st, !equality.Semantic.DeepEqual(s.Status, st)
}

// stageInputs is what a regular Stage's reconciliation reads besides the
// Stage.
type stageInputs struct {
	// promotions are the Stage's Promotions, sorted by
	// ComparePromotionByPhaseAndCreationTime.
	promotions []*kargoapi.Promotion
	verifier   Verifier
}

// promotionsOf returns the Promotions of s among promos, sorted as Kargo's
// syncPromotions sorts them.
func promotionsOf(s *kargoapi.Stage, promos []*kargoapi.Promotion) []*kargoapi.Promotion {
	var out []*kargoapi.Promotion
	for _, p := range promos {
		if p != nil && p.Spec.Stage == s.Name && (p.Namespace == "" || p.Namespace == s.Namespace) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, ComparePromotionByPhaseAndCreationTime)
	return out
}

// reconcileControlFlow is Kargo's ControlFlowStageReconciler: initializeStatus,
// then Ready. Marking available Freight verified is the caller's (it writes
// Freight objects).
func reconcileControlFlow(s *kargoapi.Stage, now metav1.Time) kargoapi.StageStatus {
	st := *s.Status.DeepCopy()
	if s.Generation > st.ObservedGeneration {
		st.ObservedGeneration = s.Generation
	}
	var keep []metav1.Condition
	for _, t := range []string{kargoapi.ConditionTypeReady, kargoapi.ConditionTypeReconciling} {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
			keep = append(keep, *c)
		}
	}
	st.Conditions = keep
	st.FreightHistory = nil
	st.Health = nil
	st.CurrentPromotion = nil
	st.LastPromotion = nil
	st.FreightSummary = freightSummaryNotApplic

	// Kargo sets these without an observed generation (the condition
	// setter is the status, not the Stage).
	setCondition(&st, metav1.Condition{
		Type: kargoapi.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: kargoapi.ConditionTypeReady,
	}, now)
	meta.RemoveStatusCondition(&st.Conditions, kargoapi.ConditionTypeReconciling)
	return st
}

// reconcileRegular is Kargo's RegularStageReconciler.reconcile.
func reconcileRegular(s *kargoapi.Stage, in stageInputs, now metav1.Time) kargoapi.StageStatus {
	st := *s.Status.DeepCopy()
	setCondition(&st, metav1.Condition{
		Type: kargoapi.ConditionTypeReconciling, Status: metav1.ConditionTrue,
		Reason: ReasonReconciling, ObservedGeneration: s.Generation,
	}, now)
	subReconcilers := []func(*kargoapi.Stage, stageInputs, kargoapi.StageStatus, metav1.Time) kargoapi.StageStatus{
		syncPromotions,
		assessHealth,
		verifyStageFreight,
	}
	for _, sub := range subReconcilers {
		st = sub(s, in, st, now)
		if summarizeConditions(s, &st, now) {
			st.ObservedGeneration = s.Generation
		}
	}
	// Kargo requests an immediate requeue (and keeps Reconciling) while any
	// of the Stage's Promotions is not terminal.
	if !hasNonTerminalPromotion(in.promotions) {
		meta.RemoveStatusCondition(&st.Conditions, kargoapi.ConditionTypeReconciling)
	}
	return st
}

func hasNonTerminalPromotion(promos []*kargoapi.Promotion) bool {
	for _, p := range promos {
		if !p.Status.Phase.IsTerminal() {
			return true
		}
	}
	return false
}

// summarizeConditions sets Ready from Promoting, the last Promotion,
// Healthy and Verified, and the freight summary; it reports whether the
// Stage is Ready (then Reconciling is removed).
func summarizeConditions(s *kargoapi.Stage, st *kargoapi.StageStatus, now metav1.Time) bool {
	st.FreightSummary = freightSummary(len(s.Spec.RequestedFreight), st.FreightHistory.Current())
	ready := metav1.Condition{Type: kargoapi.ConditionTypeReady, Status: metav1.ConditionFalse, ObservedGeneration: s.Generation}

	if promo := meta.FindStatusCondition(st.Conditions, kargoapi.ConditionTypePromoting); promo != nil {
		ready.Reason, ready.Message = promo.Reason, promo.Message
		setCondition(st, ready, now)
		return false
	}
	if last := st.LastPromotion; last != nil && last.Status != nil &&
		last.Status.Phase.IsTerminal() && last.Status.Phase != kargoapi.PromotionPhaseSucceeded {
		ready.Reason, ready.Message = "LastPromotion"+string(last.Status.Phase), last.Status.Message
		setCondition(st, ready, now)
		return false
	}
	if h := meta.FindStatusCondition(st.Conditions, kargoapi.ConditionTypeHealthy); h == nil || h.Status != metav1.ConditionTrue {
		ready.Reason, ready.Message = ReasonUnhealthy, MsgNotHealthy
		if h != nil {
			ready.Reason, ready.Message = h.Reason, h.Message
		}
		setCondition(st, ready, now)
		return false
	}
	v := meta.FindStatusCondition(st.Conditions, kargoapi.ConditionTypeVerified)
	if v == nil || v.Status != metav1.ConditionTrue {
		ready.Reason, ready.Message = ReasonPendingVerification, MsgNotVerified
		if v != nil {
			ready.Reason, ready.Message = v.Reason, v.Message
		}
		setCondition(st, ready, now)
		return false
	}
	ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, v.Reason, v.Message
	setCondition(st, ready, now)
	meta.RemoveStatusCondition(&st.Conditions, kargoapi.ConditionTypeReconciling)
	return true
}

// freightSummary is the Freight name when one Freight is requested and
// there, else "<have>/<requested> Fulfilled".
func freightSummary(requested int, cur *kargoapi.FreightCollection) string {
	if cur == nil {
		return fmt.Sprintf("0/%d Fulfilled", requested)
	}
	if requested == 1 && len(cur.Freight) == 1 {
		for _, f := range cur.Freight {
			return f.Name
		}
	}
	return fmt.Sprintf("%d/%d Fulfilled", len(cur.Freight), requested)
}

// setCondition sets c, keeping lastTransitionTime unless the status changes.
func setCondition(st *kargoapi.StageStatus, c metav1.Condition, now metav1.Time) {
	c.LastTransitionTime = now
	meta.SetStatusCondition(&st.Conditions, c)
}
