package v1

import (
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// flyteFixtures are the TaskActions of test/e2e/testdata/flyte-statuses.yaml:
// written by Flyte's own Enqueue and executor code, with Flyte's readings
// of each in annotations (see the file's header).
func flyteFixtures(t *testing.T) []*TaskAction {
	t.Helper()
	b, err := os.ReadFile("../../test/e2e/testdata/flyte-statuses.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []*TaskAction
	for _, doc := range strings.Split(string(b), "\n---\n") {
		ta := &TaskAction{}
		if err := yaml.UnmarshalStrict([]byte(doc), ta); err != nil {
			t.Fatal(err)
		}
		out = append(out, ta)
	}
	if len(out) < 10 {
		t.Fatalf("%d fixtures", len(out))
	}
	return out
}

// FlytePhase is a fixture's annotation, in this server's names.
func flytePhase(ta *TaskAction, key string) Phase {
	return Phase(strings.TrimPrefix(ta.Annotations["fixture.flytecheck/"+key], "ACTION_PHASE_"))
}

// Every status Flyte's executor writes reads here as Flyte's Actions
// service reads it: the port of GetPhaseFromConditions gives what the
// original gave, and so does the public phase of the action (but for a
// new action, QUEUED here and UNSPECIFIED there). An abort that Flyte's
// executor reports (Failed, reason Aborted) is FAILED on both sides.
func TestFlyteStatusesReadAsFlyteReadsThem(t *testing.T) {
	for _, ta := range flyteFixtures(t) {
		want := flytePhase(ta, "get-phase-from-conditions")
		if got := FlytePhaseOf(ta.Status.Conditions); got != want {
			t.Errorf("%s: FlytePhaseOf %s, Flyte read %s", ta.Name, got, want)
		}
		if !EnqueuedByFlyte(ta) {
			t.Errorf("%s: not taken for Flyte's", ta.Name)
		}
		if len(ta.Status.Conditions) == 0 {
			want = PhaseQueued
		}
		if got := PhaseOfAction(ta); got != want {
			t.Errorf("%s: public phase %s, Flyte reads %s", ta.Name, got, want)
		}
	}
}

// Flyte's own table (actions/k8s client_condition_test.go
// TestGetPhaseFromConditions_ConditionPhases), and its first-match rule.
func TestFlytePhaseOf(t *testing.T) {
	cond := func(typ string, st metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: st, Reason: reason}
	}
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  Phase
	}{
		{"paused", []metav1.Condition{cond(ConditionProgressing, T, ReasonPaused)}, PhasePaused},
		{"timed out", []metav1.Condition{cond(ConditionFailed, T, ReasonTimedOut)}, PhaseTimedOut},
		{"plain failure keeps FAILED", []metav1.Condition{cond(ConditionFailed, T, ReasonPermanentFailure)}, PhaseFailed},
		{"aborted is a failure", []metav1.Condition{cond(ConditionProgressing, F, ReasonAborted), cond(ConditionFailed, T, ReasonAborted)}, PhaseFailed},
		{"recovered is a success", []metav1.Condition{cond(ConditionSucceeded, T, ReasonRecovered)}, PhaseSucceeded},
		{"none", nil, PhaseUnspecified},
		{"unknown progressing reason", []metav1.Condition{cond(ConditionProgressing, T, ReasonWaitingForResources)}, PhaseUnspecified},
		{"the first match decides", []metav1.Condition{cond(ConditionProgressing, T, ReasonExecuting), cond(ConditionFailed, T, ReasonPermanentFailure)}, PhaseRunning},
	} {
		if got := FlytePhaseOf(tc.conds); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// This server's abort of its own action is ABORTED; one an earlier
// version wrote on an action of Flyte's stays ABORTED (history has it so).
func TestPhaseOfActionAborts(t *testing.T) {
	aborted := []metav1.Condition{
		{Type: ConditionProgressing, Status: metav1.ConditionFalse, Reason: ReasonAborted},
		{Type: ConditionFailed, Status: metav1.ConditionTrue, Reason: ReasonAborted},
	}
	ours := &TaskAction{Spec: TaskActionSpec{TaskTemplate: []byte(`{"type":"echo"}`)}, Status: TaskActionStatus{Conditions: aborted}}
	flytes := &TaskAction{Spec: TaskActionSpec{TaskTemplate: []byte{0x12, 0x06}}, Status: TaskActionStatus{Conditions: aborted}}
	if p := PhaseOfAction(ours); p != PhaseAborted {
		t.Errorf("this server's abort: %s", p)
	}
	if p := PhaseOfAction(flytes); p != PhaseFailed {
		t.Errorf("Flyte's executor's abort: %s", p)
	}
	flytes.Annotations = map[string]string{AnnotationAbortReason: "by an earlier version"}
	if p := PhaseOfAction(flytes); p != PhaseAborted {
		t.Errorf("an earlier version's abort of Flyte's action: %s", p)
	}
}
