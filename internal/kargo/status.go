package kargo

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	"taskactions/api/kargo/v1alpha1"
)

// Reasons and messages of the Stage controller (Kargo v1.6.3
// internal/controller/stages/{regular,control_flow}_stages.go).
const (
	ReasonReconciling         = "Reconciling"
	ReasonNoFreight           = "NoFreight"
	ReasonUnhealthy           = "Unhealthy"
	ReasonPendingVerification = "PendingVerification"
	ReasonVerified            = "Verified"

	MsgNoFreight            = "Stage has no current Freight"
	MsgNoFreightToVerify    = "Stage has no current Freight to verify"
	MsgNotHealthy           = "Stage is not healthy"
	MsgNotVerified          = "Stage is not verified"
	MsgFreightVerified      = "Freight has been verified"
	MsgLastPromotionFailed  = "Cannot assess health because last Promotion did not succeed"
	MsgRolloutsDisabled     = "Rollouts integration is disabled on this controller: cannot start verification"
	msgNoHealthCheckerFmt   = "no health checker registered for health check kind %q"
	freightSummaryNotApplic = "N/A"
)

// newVerificationID names a started verification (Kargo: uuid.NewString()).
var newVerificationID = func() string { return string(uuid.NewUUID()) }

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
func Reconcile(s *v1alpha1.Stage, now metav1.Time) (v1alpha1.StageStatus, bool) {
	var st v1alpha1.StageStatus
	if s.IsControlFlow() {
		st = reconcileControlFlow(s, now)
	} else {
		st = reconcileRegular(s, stageInputs{}, now)
	}
	if token, ok := s.Annotations[v1alpha1.AnnotationKeyRefresh]; ok {
		st.LastHandledRefresh = token
	}
	return st, !equality.Semantic.DeepEqual(s.Status, st)
}

// stageInputs is what a regular Stage's reconciliation reads besides the
// Stage. Empty for now: Promotions (for syncPromotions) and AnalysisRuns
// (for verification) come with later issues and only add states.
type stageInputs struct{}

// reconcileControlFlow is Kargo's ControlFlowStageReconciler: initializeStatus,
// then Ready. Marking available Freight verified is the caller's (it writes
// Freight objects).
func reconcileControlFlow(s *v1alpha1.Stage, now metav1.Time) v1alpha1.StageStatus {
	st := *s.Status.DeepCopy()
	if s.Generation > st.ObservedGeneration {
		st.ObservedGeneration = s.Generation
	}
	var keep []metav1.Condition
	for _, t := range []string{v1alpha1.ConditionTypeReady, v1alpha1.ConditionTypeReconciling} {
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
		Type: v1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ConditionTypeReady,
	}, now)
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionTypeReconciling)
	return st
}

// reconcileRegular is Kargo's RegularStageReconciler.reconcile.
func reconcileRegular(s *v1alpha1.Stage, in stageInputs, now metav1.Time) v1alpha1.StageStatus {
	st := *s.Status.DeepCopy()
	setCondition(&st, metav1.Condition{
		Type: v1alpha1.ConditionTypeReconciling, Status: metav1.ConditionTrue,
		Reason: ReasonReconciling, ObservedGeneration: s.Generation,
	}, now)
	subReconcilers := []func(*v1alpha1.Stage, stageInputs, v1alpha1.StageStatus, metav1.Time) v1alpha1.StageStatus{
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
	// No immediate requeue is ever requested without pending Promotions.
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionTypeReconciling)
	return st
}

// syncPromotions with no Promotions: not promoting.
func syncPromotions(_ *v1alpha1.Stage, _ stageInputs, st v1alpha1.StageStatus, _ metav1.Time) v1alpha1.StageStatus {
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionTypePromoting)
	st.CurrentPromotion = nil
	return st
}

// assessHealth runs the health checks the last Promotion recorded. No
// health checker is registered here, so each check is Unknown with Kargo's
// issue for an unknown kind; zero checks are Healthy.
func assessHealth(s *v1alpha1.Stage, _ stageInputs, st v1alpha1.StageStatus, now metav1.Time) v1alpha1.StageStatus {
	last := st.LastPromotion
	if last == nil {
		setCondition(&st, metav1.Condition{
			Type: v1alpha1.ConditionTypeHealthy, Status: metav1.ConditionUnknown,
			Reason: ReasonNoFreight, Message: MsgNoFreight, ObservedGeneration: s.Generation,
		}, now)
		st.Health = nil
		return st
	}
	var phase v1alpha1.PromotionPhase
	if last.Status != nil {
		phase = last.Status.Phase
	}
	if phase != v1alpha1.PromotionPhaseSucceeded {
		setCondition(&st, metav1.Condition{
			Type: v1alpha1.ConditionTypeHealthy, Status: metav1.ConditionUnknown,
			Reason: "LastPromotion" + string(phase), Message: MsgLastPromotionFailed, ObservedGeneration: s.Generation,
		}, now)
		st.Health = &v1alpha1.Health{Status: v1alpha1.HealthStateUnknown, Issues: []string{MsgLastPromotionFailed}}
		return st
	}

	checks := last.GetHealthChecks()
	health := v1alpha1.Health{Status: v1alpha1.HealthStateHealthy}
	for _, c := range checks {
		health.Status = health.Status.Merge(v1alpha1.HealthStateUnknown)
		health.Issues = append(health.Issues, fmt.Sprintf(msgNoHealthCheckerFmt, c.Uses))
	}
	st.Health = &health
	cond := metav1.Condition{Type: v1alpha1.ConditionTypeHealthy, Reason: string(health.Status), ObservedGeneration: s.Generation}
	switch health.Status {
	case v1alpha1.HealthStateHealthy:
		cond.Status = metav1.ConditionTrue
		cond.Message = fmt.Sprintf("Stage is healthy (performed %d health checks)", len(checks))
	case v1alpha1.HealthStateUnhealthy:
		cond.Status = metav1.ConditionFalse
		cond.Message = fmt.Sprintf("Stage is unhealthy (%d issues in %d health checks)", len(health.Issues), len(checks))
	default:
		cond.Status = metav1.ConditionUnknown
	}
	setCondition(&st, cond, now)
	return st
}

// verifyStageFreight verifies the current Freight. Without spec.verification
// that succeeds at once; with it, Kargo needs Argo Rollouts, which this
// controller does not integrate, so the verification errors as Kargo's does
// when the integration is disabled. A non-terminal verification (an
// AnalysisRun) cannot exist here and is left as it is.
func verifyStageFreight(s *v1alpha1.Stage, _ stageInputs, st v1alpha1.StageStatus, now metav1.Time) (out v1alpha1.StageStatus) {
	cur := st.FreightHistory.Current()
	if cur == nil {
		setCondition(&st, metav1.Condition{
			Type: v1alpha1.ConditionTypeVerified, Status: metav1.ConditionUnknown,
			Reason: ReasonNoFreight, Message: MsgNoFreightToVerify, ObservedGeneration: s.Generation,
		}, now)
		return st
	}
	if st.CurrentPromotion != nil {
		return st
	}
	defer func() { setVerifiedCondition(s, &out, now) }()

	reverify := verificationRequest(s.Annotations[v1alpha1.AnnotationKeyReverify])
	last := cur.VerificationHistory.Current()
	if last != nil {
		if !last.Phase.IsTerminal() || !reverify.forID(last.ID) {
			return st
		}
	}
	if st.Health == nil || st.Health.Status != v1alpha1.HealthStateHealthy {
		return st
	}
	vi := v1alpha1.VerificationInfo{StartTime: now.DeepCopy(), FinishTime: now.DeepCopy()}
	if s.Spec.Verification == nil {
		vi.Phase = v1alpha1.VerificationPhaseSuccessful
	} else {
		vi.ID = newVerificationID()
		if last != nil && reverify.forID(last.ID) {
			vi.Actor = reverify.Actor
		}
		vi.Phase = v1alpha1.VerificationPhaseError
		vi.Message = MsgRolloutsDisabled
	}
	st.FreightHistory.Current().VerificationHistory.UpdateOrPush(vi)
	return st
}

// setVerifiedCondition derives Verified from the current Freight's
// verification history (the deferred part of Kargo's verifyStageFreight).
func setVerifiedCondition(s *v1alpha1.Stage, st *v1alpha1.StageStatus, now metav1.Time) {
	cur := st.FreightHistory.Current()
	if cur == nil || len(cur.VerificationHistory) == 0 {
		return
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionTypeVerified, ObservedGeneration: s.Generation}
	for _, vi := range cur.VerificationHistory {
		if vi.Phase == v1alpha1.VerificationPhaseSuccessful {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonVerified, MsgFreightVerified
			setCondition(st, cond, now)
			return
		}
	}
	last := cur.VerificationHistory.Current()
	switch last.Phase {
	case v1alpha1.VerificationPhasePending:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, "VerificationPending", "Freight is pending verification"
	case v1alpha1.VerificationPhaseRunning:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, "VerificationRunning", "Freight is currently being verified"
	case v1alpha1.VerificationPhaseFailed, v1alpha1.VerificationPhaseError:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Verification"+string(last.Phase), last.Message
	case v1alpha1.VerificationPhaseAborted:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "VerificationAborted", last.Message
	case v1alpha1.VerificationPhaseInconclusive:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, "VerificationInconclusive", last.Message
	default:
		cond.Status, cond.Reason = metav1.ConditionUnknown, "UnknownVerificationPhase"
		cond.Message = fmt.Sprintf("Freight verification is in an unknown phase: %s", last.Phase)
		cond.ObservedGeneration = 0 // Kargo sets this one without it
	}
	setCondition(st, cond, now)
}

// summarizeConditions sets Ready from Promoting, the last Promotion,
// Healthy and Verified, and the freight summary; it reports whether the
// Stage is Ready (then Reconciling is removed).
func summarizeConditions(s *v1alpha1.Stage, st *v1alpha1.StageStatus, now metav1.Time) bool {
	st.FreightSummary = freightSummary(len(s.Spec.RequestedFreight), st.FreightHistory.Current())
	ready := metav1.Condition{Type: v1alpha1.ConditionTypeReady, Status: metav1.ConditionFalse, ObservedGeneration: s.Generation}

	if promo := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionTypePromoting); promo != nil {
		ready.Reason, ready.Message = promo.Reason, promo.Message
		setCondition(st, ready, now)
		return false
	}
	if last := st.LastPromotion; last != nil && last.Status != nil &&
		last.Status.Phase.IsTerminal() && last.Status.Phase != v1alpha1.PromotionPhaseSucceeded {
		ready.Reason, ready.Message = "LastPromotion"+string(last.Status.Phase), last.Status.Message
		setCondition(st, ready, now)
		return false
	}
	if h := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionTypeHealthy); h == nil || h.Status != metav1.ConditionTrue {
		ready.Reason, ready.Message = ReasonUnhealthy, MsgNotHealthy
		if h != nil {
			ready.Reason, ready.Message = h.Reason, h.Message
		}
		setCondition(st, ready, now)
		return false
	}
	v := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionTypeVerified)
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
	meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ConditionTypeReconciling)
	return true
}

// freightSummary is the Freight name when one Freight is requested and
// there, else "<have>/<requested> Fulfilled".
func freightSummary(requested int, cur *v1alpha1.FreightCollection) string {
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
func setCondition(st *v1alpha1.StageStatus, c metav1.Condition, now metav1.Time) {
	c.LastTransitionTime = now
	meta.SetStatusCondition(&st.Conditions, c)
}

// verificationReq is Kargo's VerificationRequest, the value of the
// reverify and abort annotations: JSON, or a bare ID.
type verificationReq struct {
	ID           string `json:"id"`
	Actor        string `json:"actor,omitempty"`
	ControlPlane bool   `json:"controlPlane,omitempty"`
}

func verificationRequest(v string) *verificationReq {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	var r verificationReq
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		r = verificationReq{ID: v}
	}
	if r.ID == "" {
		return nil
	}
	return &r
}

func (r *verificationReq) forID(id string) bool { return r != nil && id != "" && r.ID == id }
