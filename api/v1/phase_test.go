package v1

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
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

// Every phase SetPhase writes reads back as itself, through the
// conditions and through the history entry, with the table's reason.
func TestSetPhaseReadsBack(t *testing.T) {
	at := time.Unix(1700000000, 0)
	for _, tc := range []struct {
		phase    Phase
		reason   string
		terminal bool
	}{
		{PhaseQueued, ReasonQueued, false},
		{PhaseWaitingForResources, ReasonWaitingForResources, false},
		{PhaseInitializing, ReasonInitializing, false},
		{PhaseRunning, ReasonExecuting, false},
		{PhasePaused, ReasonPaused, false},
		{PhaseSucceeded, ReasonCompleted, true},
		{PhaseRecovered, ReasonRecovered, true},
		{PhaseFailed, ReasonPermanentFailure, true},
		{PhaseAborted, ReasonAborted, true},
		{PhaseTimedOut, ReasonTimedOut, true},
	} {
		ta := &TaskAction{}
		SetPhase(ta, PhaseChange{Phase: tc.phase, Reason: ReasonOf(tc.phase), Message: "m", At: at})
		if got := ReasonOf(tc.phase); got != tc.reason {
			t.Errorf("%s: reason %s, want %s", tc.phase, got, tc.reason)
		}
		if got := PhaseOf(ta.Status.Conditions); got != tc.phase {
			t.Errorf("%s: conditions read as %s", tc.phase, got)
		}
		if got := tc.phase.Terminal(); got != tc.terminal {
			t.Errorf("%s: terminal %v, want %v", tc.phase, got, tc.terminal)
		}
		h := ta.Status.PhaseHistory
		if last := h[len(h)-1]; PhaseOfReason(last.Phase) != tc.phase || last.Message != "m" {
			t.Errorf("%s: last history entry %+v", tc.phase, last)
		}
		if c := meta.FindStatusCondition(ta.Status.Conditions, ConditionProgressing); c == nil || (c.Status == metav1.ConditionTrue) == tc.terminal {
			t.Errorf("%s: Progressing %+v", tc.phase, c)
		}
	}
}

// The same phase and reason again adds no history entry unless it is a
// new attempt; the history keeps its first entry and the latest ones.
func TestSetPhaseHistory(t *testing.T) {
	ta := &TaskAction{}
	for i := range 10 {
		SetPhase(ta, PhaseChange{Phase: PhaseRunning, Reason: ReasonExecuting, Message: strconv.Itoa(i), NewAttempt: i%2 == 1, HistoryLimit: 3})
	}
	var got []string
	for _, h := range ta.Status.PhaseHistory {
		got = append(got, h.Message)
	}
	if want := []string{"0", "7", "9"}; !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
}

// Unspecified is a phase no one writes: its reason is Queued's default,
// and no reason reads as it but unknown ones.
func TestUnspecifiedHasNoReason(t *testing.T) {
	if ReasonOf(PhaseUnspecified) != ReasonQueued || ReasonOf("BOGUS") != ReasonQueued {
		t.Fatal("the default reason is Queued")
	}
	if PhaseOfReason("") != PhaseUnspecified || Phase("BOGUS").Valid() || !PhaseUnspecified.Valid() {
		t.Fatal("unspecified")
	}
}
