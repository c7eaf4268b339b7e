package rules

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// fakeVerifier records what the rules ask of it and answers as told.
type fakeVerifier struct {
	result  *kargoapi.VerificationInfo // what Result answers
	started []*kargoapi.VerificationRequest
	aborted []*kargoapi.VerificationRequest
}

func (f *fakeVerifier) Start(_ *kargoapi.Stage, _ kargoapi.FreightCollection, req *kargoapi.VerificationRequest, vi kargoapi.VerificationInfo) kargoapi.VerificationInfo {
	f.started = append(f.started, req)
	vi.Phase = kargoapi.VerificationPhasePending
	vi.AnalysisRun = &kargoapi.AnalysisRunReference{Name: "test.run", Namespace: "kargo-demo"}
	return vi
}

func (f *fakeVerifier) Result(kargoapi.FreightCollection) *kargoapi.VerificationInfo { return f.result }

func (f *fakeVerifier) Abort(fc kargoapi.FreightCollection, req *kargoapi.VerificationRequest) *kargoapi.VerificationInfo {
	f.aborted = append(f.aborted, req)
	vi := fc.VerificationHistory.Current().DeepCopy()
	vi.Phase, vi.Message, vi.Actor = kargoapi.VerificationPhaseFailed, "Verification aborted by user", req.Actor
	return vi
}

// It reads better whole: its cases are one table, a line each.
func TestVerifyStageFreight(t *testing.T) {
	stubVerificationID(t)
	run := &kargoapi.AnalysisRunReference{Name: "test.run", Namespace: "kargo-demo"}
	vi := func(id string, phase kargoapi.VerificationPhase, msg string) kargoapi.VerificationInfo {
		return kargoapi.VerificationInfo{ID: id, Phase: phase, Message: msg, StartTime: &t0, AnalysisRun: run}
	}
	cases := []struct {
		name        string
		history     []kargoapi.VerificationInfo // oldest first
		annotations map[string]string
		verifier    *fakeVerifier
		unhealthy   bool
		// want is the current verification's ID and phase, and Verified.
		wantID     string
		wantPhase  kargoapi.VerificationPhase
		wantMsg    string
		verified   *wantCond
		wantStarts int
		wantAborts int
	}{
		{
			name: "healthy, none yet: an AnalysisRun is started, Pending", verifier: &fakeVerifier{},
			wantID: "vid-1", wantPhase: kargoapi.VerificationPhasePending, wantStarts: 1,
			verified: &wantCond{metav1.ConditionUnknown, "VerificationPending", "Freight is pending verification"},
		},
		{
			name: "not healthy yet: nothing starts", verifier: &fakeVerifier{}, unhealthy: true,
		},
		{
			name: "no Verifier: Kargo's Rollouts-disabled error", wantID: "vid-1",
			wantPhase: kargoapi.VerificationPhaseError, wantMsg: MsgRolloutsDisabled,
			verified: &wantCond{metav1.ConditionFalse, "VerificationError", MsgRolloutsDisabled},
		},
		{
			name:    "running: its AnalysisRun's result is recorded",
			history: []kargoapi.VerificationInfo{vi("v1", kargoapi.VerificationPhasePending, "")},
			verifier: &fakeVerifier{result: func() *kargoapi.VerificationInfo {
				r := vi("v1", kargoapi.VerificationPhaseRunning, "")
				return &r
			}()},
			wantID: "v1", wantPhase: kargoapi.VerificationPhaseRunning,
			verified: &wantCond{metav1.ConditionUnknown, "VerificationRunning", "Freight is currently being verified"},
		},
		{
			name:    "failed: Verified False with the run's message",
			history: []kargoapi.VerificationInfo{vi("v1", kargoapi.VerificationPhaseRunning, "")},
			verifier: &fakeVerifier{result: func() *kargoapi.VerificationInfo {
				r := vi("v1", kargoapi.VerificationPhaseFailed, `Metric "up" assessed Failed due to failed (1) > failureLimit (0)`)
				return &r
			}()},
			wantID: "v1", wantPhase: kargoapi.VerificationPhaseFailed, wantMsg: `Metric "up" assessed Failed due to failed (1) > failureLimit (0)`,
			verified: &wantCond{metav1.ConditionFalse, "VerificationFailed", `Metric "up" assessed Failed due to failed (1) > failureLimit (0)`},
		},
		{
			name:    "inconclusive: Verified Unknown",
			history: []kargoapi.VerificationInfo{vi("v1", kargoapi.VerificationPhaseRunning, "")},
			verifier: &fakeVerifier{result: func() *kargoapi.VerificationInfo {
				r := vi("v1", kargoapi.VerificationPhaseInconclusive, "inconclusive")
				return &r
			}()},
			wantID: "v1", wantPhase: kargoapi.VerificationPhaseInconclusive, wantMsg: "inconclusive",
			verified: &wantCond{metav1.ConditionUnknown, "VerificationInconclusive", "inconclusive"},
		},
		{
			name:        "abort asked for the running one: aborted, Failed",
			history:     []kargoapi.VerificationInfo{vi("v1", kargoapi.VerificationPhaseRunning, "")},
			annotations: map[string]string{kargoapi.AnnotationKeyAbort: `{"id":"v1","actor":"alice"}`},
			verifier:    &fakeVerifier{},
			wantID:      "v1", wantPhase: kargoapi.VerificationPhaseFailed, wantMsg: "Verification aborted by user", wantAborts: 1,
			verified: &wantCond{metav1.ConditionFalse, "VerificationFailed", "Verification aborted by user"},
		},
		{
			name:        "abort for another ID: followed as usual",
			history:     []kargoapi.VerificationInfo{vi("v1", kargoapi.VerificationPhaseRunning, "")},
			annotations: map[string]string{kargoapi.AnnotationKeyAbort: "v0"},
			verifier: &fakeVerifier{result: func() *kargoapi.VerificationInfo {
				r := vi("v1", kargoapi.VerificationPhaseRunning, "")
				return &r
			}()},
			wantID: "v1", wantPhase: kargoapi.VerificationPhaseRunning,
			verified: &wantCond{metav1.ConditionUnknown, "VerificationRunning", "Freight is currently being verified"},
		},
		{
			name:        "abort without a Verifier: Kargo's error",
			history:     []kargoapi.VerificationInfo{vi("v1", kargoapi.VerificationPhaseRunning, "")},
			annotations: map[string]string{kargoapi.AnnotationKeyAbort: "v1"},
			wantID:      "v1", wantPhase: kargoapi.VerificationPhaseError, wantMsg: msgRolloutsDisabledAbort,
			verified: &wantCond{metav1.ConditionFalse, "VerificationError", msgRolloutsDisabledAbort},
		},
		{
			name:     "ended: not started again",
			history:  []kargoapi.VerificationInfo{vi("v1", kargoapi.VerificationPhaseFailed, "bad")},
			verifier: &fakeVerifier{},
			wantID:   "v1", wantPhase: kargoapi.VerificationPhaseFailed, wantMsg: "bad",
			verified: &wantCond{metav1.ConditionFalse, "VerificationFailed", "bad"},
		},
		{
			name:        "reverify of the last one: a new verification, with the actor",
			history:     []kargoapi.VerificationInfo{vi("v1", kargoapi.VerificationPhaseFailed, "bad")},
			annotations: map[string]string{kargoapi.AnnotationKeyReverify: `{"id":"v1","actor":"bob"}`},
			verifier:    &fakeVerifier{},
			wantID:      "vid-1", wantPhase: kargoapi.VerificationPhasePending, wantStarts: 1,
			verified: &wantCond{metav1.ConditionUnknown, "VerificationPending", "Freight is pending verification"},
		},
		{
			name:        "reverify of an older one: ignored",
			history:     []kargoapi.VerificationInfo{vi("v0", kargoapi.VerificationPhaseFailed, ""), vi("v1", kargoapi.VerificationPhaseFailed, "bad")},
			annotations: map[string]string{kargoapi.AnnotationKeyReverify: "v0"},
			verifier:    &fakeVerifier{},
			wantID:      "v1", wantPhase: kargoapi.VerificationPhaseFailed, wantMsg: "bad",
			verified: &wantCond{metav1.ConditionFalse, "VerificationFailed", "bad"},
		},
		{
			name:     "an earlier success counts: Verified True though the last failed",
			history:  []kargoapi.VerificationInfo{vi("v0", kargoapi.VerificationPhaseSuccessful, ""), vi("v1", kargoapi.VerificationPhaseFailed, "bad")},
			verifier: &fakeVerifier{},
			wantID:   "v1", wantPhase: kargoapi.VerificationPhaseFailed, wantMsg: "bad",
			verified: &wantCond{metav1.ConditionTrue, "Verified", "Freight has been verified"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := withFreight(regularStage(1, 1))
			s.Spec.Verification = &kargoapi.Verification{AnalysisTemplates: []kargoapi.AnalysisTemplateReference{{Name: "up"}}}
			s.Annotations = tc.annotations
			s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
			if tc.unhealthy {
				s.Status.Health.Status = kargoapi.HealthStateUnhealthy
			}
			for _, h := range tc.history {
				s.Status.FreightHistory[0].VerificationHistory.UpdateOrPush(h)
			}
			in := stageInputs{}
			if tc.verifier != nil {
				in.verifier = tc.verifier
			}
			st := verifyStageFreight(s, in, *s.Status.DeepCopy(), t1)
			cur := st.FreightHistory.Current().VerificationHistory.Current()
			var id string
			var phase kargoapi.VerificationPhase
			var msg string
			if cur != nil {
				id, phase, msg = cur.ID, cur.Phase, cur.Message
			}
			if id != tc.wantID || phase != tc.wantPhase || msg != tc.wantMsg {
				t.Errorf("current verification %q %s %q, want %q %s %q", id, phase, msg, tc.wantID, tc.wantPhase, tc.wantMsg)
			}
			checkCond(t, st, kargoapi.ConditionTypeVerified, tc.verified)
			if tc.verifier != nil && (len(tc.verifier.started) != tc.wantStarts || len(tc.verifier.aborted) != tc.wantAborts) {
				t.Errorf("started %d, aborted %d; want %d, %d", len(tc.verifier.started), len(tc.verifier.aborted), tc.wantStarts, tc.wantAborts)
			}
			if tc.wantStarts > 0 && tc.annotations[kargoapi.AnnotationKeyReverify] != "" && cur.Actor != "bob" {
				t.Errorf("reverification actor %q, want bob", cur.Actor)
			}
		})
	}
}

func checkCond(t *testing.T, st kargoapi.StageStatus, typ string, want *wantCond) {
	t.Helper()
	got := meta.FindStatusCondition(st.Conditions, typ)
	switch {
	case want == nil && got != nil:
		t.Errorf("%s: %s/%s %q, want none", typ, got.Status, got.Reason, got.Message)
	case want != nil && got == nil:
		t.Errorf("%s: none, want %s/%s", typ, want.status, want.reason)
	case want != nil && (got.Status != want.status || got.Reason != want.reason || got.Message != want.message):
		t.Errorf("%s: %s/%s %q, want %s/%s %q", typ, got.Status, got.Reason, got.Message, want.status, want.reason, want.message)
	}
}
