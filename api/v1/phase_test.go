package v1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Conditions read as Flyte's GetPhaseFromConditions reads them, but for
// the two statuses Flyte never writes (see PhaseOf).
func TestPhaseOf(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason}
	}
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  Phase
	}{
		{"new", nil, PhaseQueued},
		{"queued", []metav1.Condition{cond(ConditionProgressing, T, ReasonQueued)}, PhaseQueued},
		{"initializing", []metav1.Condition{cond(ConditionProgressing, T, ReasonInitializing)}, PhaseInitializing},
		{"executing", []metav1.Condition{cond(ConditionProgressing, T, ReasonExecuting)}, PhaseRunning},
		{"paused", []metav1.Condition{cond(ConditionProgressing, T, ReasonPaused)}, PhasePaused},
		{"waiting (this server's)", []metav1.Condition{cond(ConditionProgressing, T, ReasonWaitingForResources)}, PhaseWaitingForResources},
		{"retryable failure (Flyte: no phase)", []metav1.Condition{cond(ConditionProgressing, T, ReasonRetryableFailure)}, PhaseUnspecified},
		{"progressing false only", []metav1.Condition{cond(ConditionProgressing, F, ReasonCompleted)}, PhaseUnspecified},
		{"completed", []metav1.Condition{cond(ConditionProgressing, F, ReasonCompleted), cond(ConditionSucceeded, T, ReasonCompleted)}, PhaseSucceeded},
		{"signalled", []metav1.Condition{cond(ConditionProgressing, F, ReasonSignaled), cond(ConditionSucceeded, T, ReasonSignaled)}, PhaseSucceeded},
		{"recovered", []metav1.Condition{cond(ConditionProgressing, F, ReasonRecovered), cond(ConditionSucceeded, T, ReasonRecovered)}, PhaseRecovered},
		{"permanent failure", []metav1.Condition{cond(ConditionFailed, T, ReasonPermanentFailure)}, PhaseFailed},
		{"invalid spec", []metav1.Condition{cond(ConditionFailed, T, ReasonInvalidSpec)}, PhaseFailed},
		{"timed out", []metav1.Condition{cond(ConditionFailed, T, ReasonTimedOut)}, PhaseTimedOut},
		{"aborted (this server's)", []metav1.Condition{cond(ConditionFailed, T, ReasonAborted)}, PhaseAborted},
	} {
		if got := PhaseOf(tc.conds); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestPhaseOfReason(t *testing.T) {
	for reason, want := range map[string]Phase{
		ReasonQueued: PhaseQueued, ReasonInitializing: PhaseInitializing, ReasonExecuting: PhaseRunning,
		ReasonPaused: PhasePaused, ReasonCompleted: PhaseSucceeded, ReasonSignaled: PhaseSucceeded,
		ReasonRecovered: PhaseRecovered, ReasonPermanentFailure: PhaseFailed, ReasonTimedOut: PhaseTimedOut,
		ReasonAborted: PhaseAborted, ReasonInvalidSpec: PhaseFailed, ReasonPluginNotFound: PhaseFailed,
		// A retried attempt is the action going back to the queue, never
		// a terminal FAILED followed by more phases.
		ReasonRetryableFailure: PhaseQueued,
		"Dancing":              PhaseUnspecified,
	} {
		if got := PhaseOfReason(reason); got != want {
			t.Errorf("%s: %s, want %s", reason, got, want)
		}
	}
	for _, p := range Phases {
		if p.Terminal() != (p == PhaseSucceeded || p == PhaseFailed || p == PhaseAborted || p == PhaseTimedOut || p == PhaseRecovered) {
			t.Errorf("%s: terminal %v", p, p.Terminal())
		}
	}
}
