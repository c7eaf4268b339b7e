package rules

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// newVerificationID names a verification (Kargo: uuid.NewString()).
var newVerificationID = func() string { return string(uuid.NewUUID()) }

// Verifier reaches the AnalysisRuns that verify a Stage's Freight: Kargo's
// startVerification, getVerificationResult and abortVerification. The
// rules decide when; a Verifier does it and returns what to record, its
// failures included (as Kargo records them, in the VerificationInfo).
type Verifier interface {
	// Start starts a verification of fc, whose info vi has its ID,
	// actor and start time, unless req is nil and an AnalysisRun for the
	// Stage and fc exists already: then that one's state is returned.
	Start(s *kargoapi.Stage, fc kargoapi.FreightCollection, req *kargoapi.VerificationRequest, vi kargoapi.VerificationInfo) kargoapi.VerificationInfo
	// Result is the state of fc's current verification, from its
	// AnalysisRun; nil when there is nothing to read it from.
	Result(fc kargoapi.FreightCollection) *kargoapi.VerificationInfo
	// Abort terminates fc's current verification for req.
	Abort(fc kargoapi.FreightCollection, req *kargoapi.VerificationRequest) *kargoapi.VerificationInfo
}

// verifyStageFreight is Kargo's: it verifies the current Freight once the
// Stage is healthy, follows a verification that runs, aborts or restarts
// one on request (the abort and reverify annotations), and derives
// Verified. Without spec.verification that succeeds at once; with it and
// no Verifier (no AnalysisRuns are served), the verification errors as
// Kargo's does when its Rollouts integration is disabled.
func verifyStageFreight(s *kargoapi.Stage, in stageInputs, st kargoapi.StageStatus, now metav1.Time) (out kargoapi.StageStatus) {
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
	record := func(vi *kargoapi.VerificationInfo) kargoapi.StageStatus {
		if vi != nil {
			st.FreightHistory.Current().VerificationHistory.UpdateOrPush(*vi)
		}
		return st
	}

	reverify := kargoapi.ParseVerificationRequest(s.Annotations[kargoapi.AnnotationKeyReverify])
	if last := cur.VerificationHistory.Current(); last != nil {
		if !last.Phase.IsTerminal() {
			return record(followVerification(s, in.verifier, *cur, *last, now))
		}
		if !reverify.ForID(last.ID) {
			return st
		}
	}
	if st.Health == nil || st.Health.Status != kargoapi.HealthStateHealthy {
		return st
	}
	vi := kargoapi.VerificationInfo{ID: newVerificationID(), StartTime: now.DeepCopy()}
	if last := cur.VerificationHistory.Current(); last != nil && reverify.ForID(last.ID) {
		vi.Actor = reverify.Actor
	}
	switch {
	case s.Spec.Verification == nil:
		vi.Actor = ""
		vi.FinishTime, vi.Phase = now.DeepCopy(), kargoapi.VerificationPhaseSuccessful
	case in.verifier == nil:
		vi.FinishTime, vi.Phase, vi.Message = now.DeepCopy(), kargoapi.VerificationPhaseError, MsgRolloutsDisabled
	default:
		vi = in.verifier.Start(s, *cur, reverify, vi)
	}
	return record(&vi)
}

// followVerification is what becomes of a verification that has not
// ended: aborted when the abort annotation asks for it, else as its
// AnalysisRun is.
func followVerification(s *kargoapi.Stage, v Verifier, cur kargoapi.FreightCollection, last kargoapi.VerificationInfo, now metav1.Time) *kargoapi.VerificationInfo {
	abort := kargoapi.ParseVerificationRequest(s.Annotations[kargoapi.AnnotationKeyAbort])
	if v == nil {
		msg := msgRolloutsDisabledResult
		if abort.ForID(last.ID) {
			msg = msgRolloutsDisabledAbort
		}
		vi := last.DeepCopy()
		vi.FinishTime, vi.Phase, vi.Message = now.DeepCopy(), kargoapi.VerificationPhaseError, msg
		return vi
	}
	if abort.ForID(last.ID) {
		return v.Abort(cur, abort)
	}
	return v.Result(cur)
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
