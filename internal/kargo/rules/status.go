package rules

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

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
	var st kargoapi.StageStatus
	if s.IsControlFlow() {
		st = reconcileControlFlow(s, now)
	} else {
		st = reconcileRegular(s, stageInputs{promotions: promotionsOf(s, promos)}, now)
	}
	if token, ok := s.Annotations[kargoapi.AnnotationKeyRefresh]; ok {
		st.LastHandledRefresh = token
	}
	return st, !equality.Semantic.DeepEqual(s.Status, st)
}

// stageInputs is what a regular Stage's reconciliation reads besides the
// Stage. AnalysisRuns (for verification) come with a later issue and only
// add states.
type stageInputs struct {
	// promotions are the Stage's Promotions, sorted by
	// ComparePromotionByPhaseAndCreationTime.
	promotions []*kargoapi.Promotion
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
	currentPromo := st.CurrentPromotion
	lastPromo := st.LastPromotion

	// The current Promotion is no longer the highest-priority one, or that
	// one is terminal: the current Promotion has finished.
	if currentPromo != nil && (currentPromo.Name != highest.Name || highest.Status.Phase.IsTerminal()) {
		meta.RemoveStatusCondition(&st.Conditions, kargoapi.ConditionTypePromoting)
		st.CurrentPromotion = nil

		// Promotions terminated since the last one recorded. Names embed a
		// ULID, so they order by creation; terminal ones come newest first.
		var newPromotions []kargoapi.PromotionReference
		for _, p := range promos {
			if lastPromo != nil && strings.Compare(p.Name, lastPromo.Name) <= 0 {
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
				newPromotions = append(newPromotions, info)
			}
		}
		// Oldest first, so that the Freight history keeps the newest.
		slices.SortFunc(newPromotions, func(a, b kargoapi.PromotionReference) int {
			return strings.Compare(a.Name, b.Name)
		})
		for i := range newPromotions {
			p := newPromotions[i]
			st.LastPromotion = &p
			if p.Status.Phase == kargoapi.PromotionPhaseSucceeded {
				st.FreightHistory.Record(p.Status.FreightCollection)
				st.Health = nil
				setCondition(&st, metav1.Condition{
					Type: kargoapi.ConditionTypeHealthy, Status: metav1.ConditionUnknown,
					Reason: ReasonWaitingForHealthCheck, Message: MsgWaitingForHealthCheck, ObservedGeneration: s.Generation,
				}, now)
				setCondition(&st, metav1.Condition{
					Type: kargoapi.ConditionTypeVerified, Status: metav1.ConditionUnknown,
					Reason: ReasonWaitingForVerification, Message: MsgWaitingForVerification, ObservedGeneration: s.Generation,
				}, now)
			}
		}
		return st
	}

	// Hold the queue while the current Freight awaits its verification: a
	// non-terminal one, or (healthy or health not assessed) none terminal
	// yet. An unhealthy Stage or a failed verification lets the next
	// Promotion start, since it may fix the Stage.
	if cur := st.FreightHistory.Current(); cur != nil {
		if cur.HasNonTerminalVerification() {
			meta.RemoveStatusCondition(&st.Conditions, kargoapi.ConditionTypePromoting)
			return st
		}
		if st.Health == nil || st.Health.Status == kargoapi.HealthStateHealthy {
			if vi := cur.VerificationHistory.Current(); vi == nil || !vi.Phase.IsTerminal() {
				meta.RemoveStatusCondition(&st.Conditions, kargoapi.ConditionTypePromoting)
				return st
			}
		}
	}

	if !highest.Status.Phase.IsTerminal() {
		setCondition(&st, metav1.Condition{
			Type: kargoapi.ConditionTypePromoting, Status: metav1.ConditionTrue, Reason: ReasonActivePromotion,
			Message:            fmt.Sprintf(MsgActivePromotionFmt, highest.Name, highest.Status.Phase),
			ObservedGeneration: s.Generation,
		}, now)
		st.CurrentPromotion = &kargoapi.PromotionReference{Name: highest.Name}
		if f := highest.Status.Freight; f != nil {
			st.CurrentPromotion.Freight = f.DeepCopy()
		}
		return st
	}

	meta.RemoveStatusCondition(&st.Conditions, kargoapi.ConditionTypePromoting)
	return st
}

// assessHealth runs the health checks the last Promotion recorded. No
// health checker is registered here, so each check is Unknown with Kargo's
// issue for an unknown kind; zero checks are Healthy.
func assessHealth(s *kargoapi.Stage, _ stageInputs, st kargoapi.StageStatus, now metav1.Time) kargoapi.StageStatus {
	last := st.LastPromotion
	if last == nil {
		setCondition(&st, metav1.Condition{
			Type: kargoapi.ConditionTypeHealthy, Status: metav1.ConditionUnknown,
			Reason: ReasonNoFreight, Message: MsgNoFreight, ObservedGeneration: s.Generation,
		}, now)
		st.Health = nil
		return st
	}
	var phase kargoapi.PromotionPhase
	if last.Status != nil {
		phase = last.Status.Phase
	}
	if phase != kargoapi.PromotionPhaseSucceeded {
		setCondition(&st, metav1.Condition{
			Type: kargoapi.ConditionTypeHealthy, Status: metav1.ConditionUnknown,
			Reason: "LastPromotion" + string(phase), Message: MsgLastPromotionFailed, ObservedGeneration: s.Generation,
		}, now)
		st.Health = &kargoapi.Health{Status: kargoapi.HealthStateUnknown, Issues: []string{MsgLastPromotionFailed}}
		return st
	}

	checks := last.GetHealthChecks()
	health := kargoapi.Health{Status: kargoapi.HealthStateHealthy}
	for _, c := range checks {
		health.Status = health.Status.Merge(kargoapi.HealthStateUnknown)
		health.Issues = append(health.Issues, fmt.Sprintf(msgNoHealthCheckerFmt, c.Uses))
	}
	st.Health = &health
	cond := metav1.Condition{Type: kargoapi.ConditionTypeHealthy, Reason: string(health.Status), ObservedGeneration: s.Generation}
	switch health.Status {
	case kargoapi.HealthStateHealthy:
		cond.Status = metav1.ConditionTrue
		cond.Message = fmt.Sprintf("Stage is healthy (performed %d health checks)", len(checks))
	case kargoapi.HealthStateUnhealthy:
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
func verifyStageFreight(s *kargoapi.Stage, _ stageInputs, st kargoapi.StageStatus, now metav1.Time) (out kargoapi.StageStatus) {
	cur := st.FreightHistory.Current()
	if cur == nil {
		setCondition(&st, metav1.Condition{
			Type: kargoapi.ConditionTypeVerified, Status: metav1.ConditionUnknown,
			Reason: ReasonNoFreight, Message: MsgNoFreightToVerify, ObservedGeneration: s.Generation,
		}, now)
		return st
	}
	if st.CurrentPromotion != nil {
		return st
	}
	defer func() { setVerifiedCondition(s, &out, now) }()

	reverify := verificationRequest(s.Annotations[kargoapi.AnnotationKeyReverify])
	last := cur.VerificationHistory.Current()
	if last != nil {
		if !last.Phase.IsTerminal() || !reverify.forID(last.ID) {
			return st
		}
	}
	if st.Health == nil || st.Health.Status != kargoapi.HealthStateHealthy {
		return st
	}
	vi := kargoapi.VerificationInfo{StartTime: now.DeepCopy(), FinishTime: now.DeepCopy()}
	if s.Spec.Verification == nil {
		vi.Phase = kargoapi.VerificationPhaseSuccessful
	} else {
		vi.ID = newVerificationID()
		if last != nil && reverify.forID(last.ID) {
			vi.Actor = reverify.Actor
		}
		vi.Phase = kargoapi.VerificationPhaseError
		vi.Message = MsgRolloutsDisabled
	}
	st.FreightHistory.Current().VerificationHistory.UpdateOrPush(vi)
	return st
}

// setVerifiedCondition derives Verified from the current Freight's
// verification history (the deferred part of Kargo's verifyStageFreight).
func setVerifiedCondition(s *kargoapi.Stage, st *kargoapi.StageStatus, now metav1.Time) {
	cur := st.FreightHistory.Current()
	if cur == nil || len(cur.VerificationHistory) == 0 {
		return
	}
	cond := metav1.Condition{Type: kargoapi.ConditionTypeVerified, ObservedGeneration: s.Generation}
	for _, vi := range cur.VerificationHistory {
		if vi.Phase == kargoapi.VerificationPhaseSuccessful {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonVerified, MsgFreightVerified
			setCondition(st, cond, now)
			return
		}
	}
	last := cur.VerificationHistory.Current()
	switch last.Phase {
	case kargoapi.VerificationPhasePending:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, "VerificationPending", "Freight is pending verification"
	case kargoapi.VerificationPhaseRunning:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, "VerificationRunning", "Freight is currently being verified"
	case kargoapi.VerificationPhaseFailed, kargoapi.VerificationPhaseError:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Verification"+string(last.Phase), last.Message
	case kargoapi.VerificationPhaseAborted:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "VerificationAborted", last.Message
	case kargoapi.VerificationPhaseInconclusive:
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

// VerifiedFreight returns the names of the Freight in s's current Freight
// collection that its status shows verified, i.e. the Freight Kargo's
// markFreightVerifiedForStage marks verifiedIn the Stage: the Stage is
// Healthy and the collection's latest verification is Successful with none
// still running. Nil otherwise, and for control-flow Stages (which mark the
// Freight available to them, not their current Freight).
func VerifiedFreight(s *kargoapi.Stage) (freightNames []string) {
	if verifiedCollection(s) == nil {
		return nil
	}
	for _, ref := range s.Status.FreightHistory.Current().References() {
		freightNames = append(freightNames, ref.Name)
	}
	return freightNames
}

// verifiedCollection returns s's current Freight collection when
// markFreightVerifiedForStage would mark its Freight verified, else nil.
func verifiedCollection(s *kargoapi.Stage) *kargoapi.FreightCollection {
	if s.IsControlFlow() {
		return nil
	}
	st := &s.Status
	if st.Health == nil || st.Health.Status != kargoapi.HealthStateHealthy {
		return nil
	}
	cur := st.FreightHistory.Current()
	if cur == nil || len(cur.VerificationHistory) == 0 || cur.HasNonTerminalVerification() ||
		cur.VerificationHistory.Current().Phase != kargoapi.VerificationPhaseSuccessful {
		return nil
	}
	return cur
}

// MarkFreightVerified records in f's status that f is verified in s, as
// Kargo's markFreightVerifiedForStage does: when f is in VerifiedFreight(s)
// and not yet verifiedIn s, it sets status.verifiedIn[s.name].verifiedAt to
// the finish time of the verification. It reports whether f changed.
func MarkFreightVerified(f *kargoapi.Freight, s *kargoapi.Stage) bool {
	cur := verifiedCollection(s)
	if cur == nil || !cur.Includes(f.Name) || f.IsVerifiedIn(s.Name) {
		return false
	}
	if f.Status.VerifiedIn == nil {
		f.Status.VerifiedIn = make(map[string]kargoapi.VerifiedStage)
	}
	f.Status.VerifiedIn[s.Name] = kargoapi.VerifiedStage{
		VerifiedAt: cur.VerificationHistory.Current().FinishTime.DeepCopy(),
	}
	return true
}
