package v1

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PhaseHistoryLimit is the default cap of an action's phase history.
const PhaseHistoryLimit = 64

// PhaseChange is one move of an action to a phase (SetPhase). Not an
// API object: no deepcopy.
//
// +kubebuilder:object:generate=false
type PhaseChange struct {
	Phase   Phase
	Reason  string // the condition reason; ReasonOf(Phase) is the usual one
	Message string
	// NewAttempt appends a history entry even when the phase and reason
	// stay (a new attempt in the same phase).
	NewAttempt bool
	At         time.Time
	// HistoryLimit caps the phase history (0 or 1: PhaseHistoryLimit).
	HistoryLimit int
}

// SetPhase writes a phase into the conditions, as phaseRules says: its
// condition True (and Progressing False once terminal), with the change's
// reason. It appends to the phase history when the phase or reason changes
// (or NewAttempt is set). The history keeps its first entry and the most
// recent ones, so it stays small whatever happens.
func SetPhase(ta *TaskAction, c PhaseChange) {
	now := metav1.NewTime(c.At)
	prevPhase := PhaseOf(ta.Status.Conditions)
	prevReason := ""
	if pc := meta.FindStatusCondition(ta.Status.Conditions, ConditionProgressing); pc != nil {
		prevReason = pc.Reason
	}
	set := func(t string, s metav1.ConditionStatus) {
		meta.SetStatusCondition(&ta.Status.Conditions, metav1.Condition{
			Type: t, Status: s, Reason: c.Reason, Message: c.Message, LastTransitionTime: now, ObservedGeneration: ta.Generation,
		})
	}
	cond := ConditionProgressing
	if r, ok := ruleOf(c.Phase); ok {
		cond = r.condition
	}
	if cond == ConditionProgressing {
		set(ConditionProgressing, metav1.ConditionTrue)
	} else {
		set(ConditionProgressing, metav1.ConditionFalse)
		set(cond, metav1.ConditionTrue)
	}
	if c.Phase == prevPhase && c.Reason == prevReason && !c.NewAttempt && len(ta.Status.PhaseHistory) > 0 {
		return
	}
	ta.Status.PhaseHistory = append(ta.Status.PhaseHistory, PhaseTransition{Phase: c.Reason, OccurredAt: now, Message: c.Message})
	limit := c.HistoryLimit
	if limit <= 1 {
		limit = PhaseHistoryLimit
	}
	if h := ta.Status.PhaseHistory; len(h) > limit {
		ta.Status.PhaseHistory = append(h[:1], h[len(h)-(limit-1):]...)
	}
}
