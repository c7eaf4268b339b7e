package rules

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// newVerificationID names a started verification (Kargo: uuid.NewString()).
var newVerificationID = func() string { return string(uuid.NewUUID()) }

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
