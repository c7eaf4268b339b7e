package rules

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

var (
	t0 = metav1.NewTime(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

func cond(typ string, status metav1.ConditionStatus, reason, msg string, gen int64, ltt metav1.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: ltt}
}

func regularStage(gen int64, requested int) *kargoapi.Stage {
	s := &kargoapi.Stage{
		ObjectMeta: metav1.ObjectMeta{Name: "test", Namespace: "kargo-demo", Generation: gen},
		Spec: kargoapi.StageSpec{
			PromotionTemplate: &kargoapi.PromotionTemplate{Spec: kargoapi.PromotionTemplateSpec{
				Steps: []kargoapi.PromotionStep{{Uses: "git-clone"}},
			}},
		},
	}
	for i := range requested {
		s.Spec.RequestedFreight = append(s.Spec.RequestedFreight, kargoapi.FreightRequest{
			Origin:  kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: string(rune('a' + i))},
			Sources: kargoapi.FreightSources{Direct: true},
		})
	}
	return s
}

// withFreight gives s a current Freight from a succeeded last Promotion.
func withFreight(s *kargoapi.Stage, checks ...kargoapi.HealthCheckStep) *kargoapi.Stage {
	col := &kargoapi.FreightCollection{}
	col.UpdateOrPush(kargoapi.FreightReference{Name: "f1", Origin: s.Spec.RequestedFreight[0].Origin})
	s.Status.FreightHistory = kargoapi.FreightHistory{col}
	s.Status.LastPromotion = &kargoapi.PromotionReference{
		Name: "test.01", Status: &kargoapi.PromotionStatus{Phase: kargoapi.PromotionPhaseSucceeded, HealthChecks: checks},
	}
	return s
}

// noFreightConditions is a regular Stage without Freight after Reconcile.
func noFreightConditions(gen int64, ltt metav1.Time) []metav1.Condition {
	return []metav1.Condition{
		cond(kargoapi.ConditionTypeReady, metav1.ConditionFalse, "NoFreight", "Stage has no current Freight", gen, ltt),
		cond(kargoapi.ConditionTypeHealthy, metav1.ConditionUnknown, "NoFreight", "Stage has no current Freight", gen, ltt),
		cond(kargoapi.ConditionTypeVerified, metav1.ConditionUnknown, "NoFreight", "Stage has no current Freight to verify", gen, ltt),
	}
}

func stubVerificationID(t *testing.T) {
	orig := newVerificationID
	newVerificationID = func() string { return "vid-1" }
	t.Cleanup(func() { newVerificationID = orig })
}

// It reads better whole: its cases are one table, a line each.
func TestReconcile(t *testing.T) {
	stubVerificationID(t)
	cases := []struct {
		name        string
		stage       func() *kargoapi.Stage
		now         metav1.Time
		want        func(s *kargoapi.Stage) kargoapi.StageStatus
		wantChanged bool
	}{
		{
			name: "regular, new: no Freight, not Ready, generation not observed",
			stage: func() *kargoapi.Stage {
				s := regularStage(1, 1)
				s.Annotations = map[string]string{kargoapi.AnnotationKeyRefresh: "r1"}
				return s
			},
			now: t0,
			want: func(*kargoapi.Stage) kargoapi.StageStatus {
				return kargoapi.StageStatus{
					Conditions: noFreightConditions(1, t0), FreightSummary: "0/1 Fulfilled", LastHandledRefresh: "r1",
				}
			},
			wantChanged: true,
		},
		{
			name: "regular, reconciled again later: nothing changes, transition times kept",
			stage: func() *kargoapi.Stage {
				s := regularStage(1, 2)
				s.Status = kargoapi.StageStatus{Conditions: noFreightConditions(1, t0), FreightSummary: "0/2 Fulfilled", LastHandledRefresh: "r0"}
				return s
			},
			now: t1,
			want: func(s *kargoapi.Stage) kargoapi.StageStatus {
				return kargoapi.StageStatus{Conditions: noFreightConditions(1, t0), FreightSummary: "0/2 Fulfilled", LastHandledRefresh: "r0"}
			},
		},
		{
			name: "regular, new generation and refresh: observed generations of conditions follow, not the status's",
			stage: func() *kargoapi.Stage {
				s := regularStage(2, 1)
				s.Annotations = map[string]string{kargoapi.AnnotationKeyRefresh: "r2"}
				s.Status = kargoapi.StageStatus{Conditions: noFreightConditions(1, t0), FreightSummary: "0/1 Fulfilled", ObservedGeneration: 1}
				return s
			},
			now: t1,
			want: func(*kargoapi.Stage) kargoapi.StageStatus {
				return kargoapi.StageStatus{Conditions: noFreightConditions(2, t0), FreightSummary: "0/1 Fulfilled", ObservedGeneration: 1, LastHandledRefresh: "r2"}
			},
			wantChanged: true,
		},
		{
			name: "regular, was control flow: Ready turns False (new transition), stale Promoting and Reconciling go",
			stage: func() *kargoapi.Stage {
				s := regularStage(3, 1)
				s.Status = kargoapi.StageStatus{
					Conditions: []metav1.Condition{
						cond(kargoapi.ConditionTypeReady, metav1.ConditionTrue, "Ready", "", 0, t0),
						cond(kargoapi.ConditionTypeReconciling, metav1.ConditionTrue, "Reconciling", "", 2, t0),
						cond(kargoapi.ConditionTypePromoting, metav1.ConditionTrue, "ActivePromotion", "x", 2, t0),
					},
					CurrentPromotion: &kargoapi.PromotionReference{Name: "p"},
					FreightSummary:   "N/A", ObservedGeneration: 2,
				}
				return s
			},
			now: t1,
			want: func(*kargoapi.Stage) kargoapi.StageStatus {
				return kargoapi.StageStatus{Conditions: noFreightConditions(3, t1), FreightSummary: "0/1 Fulfilled", ObservedGeneration: 2}
			},
			wantChanged: true,
		},
		{
			name: "control flow: only Ready, N/A, generation observed, the rest cleared",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(4, 1))
				s.Spec.PromotionTemplate = nil
				s.Annotations = map[string]string{kargoapi.AnnotationKeyRefresh: "r4"}
				s.Status.Conditions = noFreightConditions(3, t0)
				s.Status.Conditions = append(s.Status.Conditions, cond(kargoapi.ConditionTypeReconciling, metav1.ConditionTrue, "Reconciling", "", 3, t0))
				s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
				s.Status.CurrentPromotion = &kargoapi.PromotionReference{Name: "p"}
				s.Status.FreightSummary = "f1"
				s.Status.ObservedGeneration = 3
				return s
			},
			now: t1,
			want: func(*kargoapi.Stage) kargoapi.StageStatus {
				return kargoapi.StageStatus{
					Conditions:     []metav1.Condition{cond(kargoapi.ConditionTypeReady, metav1.ConditionTrue, "Ready", "", 0, t1)},
					FreightSummary: "N/A", ObservedGeneration: 4, LastHandledRefresh: "r4",
				}
			},
			wantChanged: true,
		},
		{
			name: "control flow with an empty template, already Ready: unchanged",
			stage: func() *kargoapi.Stage {
				s := regularStage(2, 1)
				s.Spec.PromotionTemplate.Spec.Steps = nil
				s.Status = kargoapi.StageStatus{
					Conditions:     []metav1.Condition{cond(kargoapi.ConditionTypeReady, metav1.ConditionTrue, "Ready", "", 0, t0)},
					FreightSummary: "N/A", ObservedGeneration: 2,
				}
				return s
			},
			now:  t1,
			want: func(s *kargoapi.Stage) kargoapi.StageStatus { return *s.Status.DeepCopy() },
		},
		{
			name:  "regular with Freight, no verification configured: verified and Ready, generation observed",
			stage: func() *kargoapi.Stage { return withFreight(regularStage(5, 1)) },
			now:   t0,
			want: func(s *kargoapi.Stage) kargoapi.StageStatus {
				st := *s.Status.DeepCopy()
				st.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{{
					ID: "vid-1", StartTime: &t0, FinishTime: &t0, Phase: kargoapi.VerificationPhaseSuccessful,
				}}
				st.Conditions = []metav1.Condition{
					cond(kargoapi.ConditionTypeReady, metav1.ConditionTrue, "Verified", "Freight has been verified", 5, t0),
					cond(kargoapi.ConditionTypeHealthy, metav1.ConditionTrue, "Healthy", "Stage is healthy (performed 0 health checks)", 5, t0),
					cond(kargoapi.ConditionTypeVerified, metav1.ConditionTrue, "Verified", "Freight has been verified", 5, t0),
				}
				st.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
				st.FreightSummary = "f1"
				st.ObservedGeneration = 5
				return st
			},
			wantChanged: true,
		},
		{
			name: "regular with Freight and spec.verification: verification errors (no Rollouts)",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(1, 2))
				s.Spec.Verification = &kargoapi.Verification{AnalysisTemplates: []kargoapi.AnalysisTemplateReference{{Name: "smoke"}}}
				return s
			},
			now: t0,
			want: func(s *kargoapi.Stage) kargoapi.StageStatus {
				st := *s.Status.DeepCopy()
				st.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{{
					ID: "vid-1", StartTime: &t0, FinishTime: &t0, Phase: kargoapi.VerificationPhaseError,
					Message: "Rollouts integration is disabled on this controller: cannot start verification",
				}}
				st.Conditions = []metav1.Condition{
					cond(kargoapi.ConditionTypeReady, metav1.ConditionFalse, "VerificationError", "Rollouts integration is disabled on this controller: cannot start verification", 1, t0),
					cond(kargoapi.ConditionTypeHealthy, metav1.ConditionTrue, "Healthy", "Stage is healthy (performed 0 health checks)", 1, t0),
					cond(kargoapi.ConditionTypeVerified, metav1.ConditionFalse, "VerificationError", "Rollouts integration is disabled on this controller: cannot start verification", 1, t0),
				}
				st.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
				st.FreightSummary = "1/2 Fulfilled"
				return st
			},
			wantChanged: true,
		},
		{
			name: "reverify of the current verification starts a new one with the actor",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(1, 1))
				s.Spec.Verification = &kargoapi.Verification{}
				s.Annotations = map[string]string{kargoapi.AnnotationKeyReverify: `{"id":"old","actor":"admin"}`}
				s.Status.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{{ID: "old", Phase: kargoapi.VerificationPhaseFailed, Message: "boom"}}
				return s
			},
			now: t0,
			want: func(s *kargoapi.Stage) kargoapi.StageStatus {
				st := *s.Status.DeepCopy()
				st.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{
					{ID: "vid-1", Actor: "admin", StartTime: &t0, FinishTime: &t0, Phase: kargoapi.VerificationPhaseError, Message: MsgRolloutsDisabled},
					{ID: "old", Phase: kargoapi.VerificationPhaseFailed, Message: "boom"},
				}
				st.Conditions = []metav1.Condition{
					cond(kargoapi.ConditionTypeReady, metav1.ConditionFalse, "VerificationError", MsgRolloutsDisabled, 1, t0),
					cond(kargoapi.ConditionTypeHealthy, metav1.ConditionTrue, "Healthy", "Stage is healthy (performed 0 health checks)", 1, t0),
					cond(kargoapi.ConditionTypeVerified, metav1.ConditionFalse, "VerificationError", MsgRolloutsDisabled, 1, t0),
				}
				st.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
				st.FreightSummary = "f1"
				return st
			},
			wantChanged: true,
		},
		{
			name: "a terminal verification without a matching reverify is kept",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(1, 1))
				s.Annotations = map[string]string{kargoapi.AnnotationKeyReverify: "other"}
				s.Status.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{{ID: "old", Phase: kargoapi.VerificationPhaseAborted, Message: "stopped"}}
				return s
			},
			now: t0,
			want: func(s *kargoapi.Stage) kargoapi.StageStatus {
				st := *s.Status.DeepCopy()
				st.Conditions = []metav1.Condition{
					cond(kargoapi.ConditionTypeReady, metav1.ConditionFalse, "VerificationAborted", "stopped", 1, t0),
					cond(kargoapi.ConditionTypeHealthy, metav1.ConditionTrue, "Healthy", "Stage is healthy (performed 0 health checks)", 1, t0),
					cond(kargoapi.ConditionTypeVerified, metav1.ConditionFalse, "VerificationAborted", "stopped", 1, t0),
				}
				st.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
				st.FreightSummary = "f1"
				return st
			},
			wantChanged: true,
		},
		{
			name: "last Promotion failed: health Unknown, Ready False with the Promotion's message",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(1, 1))
				s.Status.LastPromotion.Status = &kargoapi.PromotionStatus{Phase: kargoapi.PromotionPhaseFailed, Message: "step failed"}
				return s
			},
			now: t0,
			want: func(s *kargoapi.Stage) kargoapi.StageStatus {
				st := *s.Status.DeepCopy()
				st.Conditions = []metav1.Condition{
					cond(kargoapi.ConditionTypeReady, metav1.ConditionFalse, "LastPromotionFailed", "step failed", 1, t0),
					cond(kargoapi.ConditionTypeHealthy, metav1.ConditionUnknown, "LastPromotionFailed", "Cannot assess health because last Promotion did not succeed", 1, t0),
				}
				st.Health = &kargoapi.Health{Status: kargoapi.HealthStateUnknown, Issues: []string{"Cannot assess health because last Promotion did not succeed"}}
				st.FreightSummary = "f1"
				return st
			},
			wantChanged: true,
		},
		{
			name: "health checks without a checker: Unknown, not verified",
			stage: func() *kargoapi.Stage {
				return withFreight(regularStage(1, 1), kargoapi.HealthCheckStep{Uses: "argocd-update"})
			},
			now: t0,
			want: func(s *kargoapi.Stage) kargoapi.StageStatus {
				st := *s.Status.DeepCopy()
				st.Conditions = []metav1.Condition{
					cond(kargoapi.ConditionTypeReady, metav1.ConditionFalse, "Unknown", "", 1, t0),
					cond(kargoapi.ConditionTypeHealthy, metav1.ConditionUnknown, "Unknown", "", 1, t0),
				}
				st.Health = &kargoapi.Health{Status: kargoapi.HealthStateUnknown, Issues: []string{`no health checker registered for health check kind "argocd-update"`}}
				st.FreightSummary = "f1"
				return st
			},
			wantChanged: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.stage()
			before := s.DeepCopy()
			got, changed := Reconcile(s, tc.now)
			want := tc.want(before)
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("status (-want +got):\n%s", diff.Diff(want, got))
			}
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if !equality.Semantic.DeepEqual(s, before) {
				t.Errorf("Reconcile modified the Stage")
			}
		})
	}
}

func TestReconcileIsIdempotent(t *testing.T) {
	stubVerificationID(t)
	for _, s := range []*kargoapi.Stage{regularStage(1, 1), withFreight(regularStage(2, 1))} {
		first, _ := Reconcile(s, t0)
		s.Status = first
		second, changed := Reconcile(s, t1)
		if changed || !equality.Semantic.DeepEqual(first, second) {
			t.Errorf("second reconcile changed the status:\n%s", diff.Diff(first, second))
		}
		if c := meta.FindStatusCondition(second.Conditions, kargoapi.ConditionTypeReady); c == nil || !c.LastTransitionTime.Equal(&t0) {
			t.Errorf("Ready transition time moved: %+v", c)
		}
	}
}

func TestFreightSummary(t *testing.T) {
	two := &kargoapi.FreightCollection{}
	two.UpdateOrPush(
		kargoapi.FreightReference{Name: "f1", Origin: kargoapi.FreightOrigin{Kind: "Warehouse", Name: "a"}},
		kargoapi.FreightReference{Name: "f2", Origin: kargoapi.FreightOrigin{Kind: "Warehouse", Name: "b"}},
	)
	one := &kargoapi.FreightCollection{}
	one.UpdateOrPush(kargoapi.FreightReference{Name: "f1", Origin: kargoapi.FreightOrigin{Kind: "Warehouse", Name: "a"}})
	cases := []struct {
		requested int
		cur       *kargoapi.FreightCollection
		want      string
	}{
		{1, nil, "0/1 Fulfilled"},
		{3, nil, "0/3 Fulfilled"},
		{1, one, "f1"},
		{2, one, "1/2 Fulfilled"},
		{2, two, "2/2 Fulfilled"},
		{1, &kargoapi.FreightCollection{}, "0/1 Fulfilled"},
	}
	for _, tc := range cases {
		if got := freightSummary(tc.requested, tc.cur); got != tc.want {
			t.Errorf("freightSummary(%d, %v) = %q, want %q", tc.requested, tc.cur, got, tc.want)
		}
	}
}

func TestSummarizeConditions(t *testing.T) {
	s := regularStage(7, 1)
	cases := []struct {
		name                  string
		conds                 []metav1.Condition
		last                  *kargoapi.PromotionReference
		wantReason, wantMsg   string
		wantReady, wantReconc bool
	}{
		{
			name:       "promoting",
			conds:      []metav1.Condition{cond(kargoapi.ConditionTypePromoting, metav1.ConditionTrue, "ActivePromotion", `Promotion "p" is currently Running`, 7, t0)},
			wantReason: "ActivePromotion", wantMsg: `Promotion "p" is currently Running`, wantReconc: true,
		},
		{
			name:       "last promotion errored",
			last:       &kargoapi.PromotionReference{Name: "p", Status: &kargoapi.PromotionStatus{Phase: kargoapi.PromotionPhaseErrored, Message: "boom"}},
			wantReason: "LastPromotionErrored", wantMsg: "boom", wantReconc: true,
		},
		{name: "no Healthy condition", wantReason: "Unhealthy", wantMsg: "Stage is not healthy", wantReconc: true},
		{
			name:       "healthy, no Verified condition",
			conds:      []metav1.Condition{cond(kargoapi.ConditionTypeHealthy, metav1.ConditionTrue, "Healthy", "ok", 7, t0)},
			wantReason: "PendingVerification", wantMsg: "Stage is not verified", wantReconc: true,
		},
		{
			name: "healthy and verified",
			conds: []metav1.Condition{
				cond(kargoapi.ConditionTypeHealthy, metav1.ConditionTrue, "Healthy", "ok", 7, t0),
				cond(kargoapi.ConditionTypeVerified, metav1.ConditionTrue, "Verified", "Freight has been verified", 7, t0),
			},
			wantReason: "Verified", wantMsg: "Freight has been verified", wantReady: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := kargoapi.StageStatus{
				Conditions:    append([]metav1.Condition{cond(kargoapi.ConditionTypeReconciling, metav1.ConditionTrue, "Reconciling", "", 7, t0)}, tc.conds...),
				LastPromotion: tc.last,
			}
			ready := summarizeConditions(s, &st, t1)
			c := meta.FindStatusCondition(st.Conditions, kargoapi.ConditionTypeReady)
			if ready != tc.wantReady || c == nil || c.Reason != tc.wantReason || c.Message != tc.wantMsg ||
				(c.Status == metav1.ConditionTrue) != tc.wantReady || c.ObservedGeneration != 7 {
				t.Errorf("ready=%v Ready=%+v", ready, c)
			}
			if got := meta.FindStatusCondition(st.Conditions, kargoapi.ConditionTypeReconciling) != nil; got != tc.wantReconc {
				t.Errorf("Reconciling present = %v, want %v", got, tc.wantReconc)
			}
		})
	}
}
