package rules

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// collection is the FreightCollection of one Freight from origin "a"
// (regularStage's first requested origin).
func collection(freight string, vis ...kargoapi.VerificationInfo) *kargoapi.FreightCollection {
	c := &kargoapi.FreightCollection{}
	c.UpdateOrPush(kargoapi.FreightReference{Name: freight, Origin: kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "a"}})
	c.VerificationHistory = vis
	return c
}

// finished is a Promotion of freight in a terminal phase.
func finished(name string, phase kargoapi.PromotionPhase, freight string) *kargoapi.Promotion {
	p := promo(name, phase)
	p.Spec.Freight = freight
	p.Status.Freight = &kargoapi.FreightReference{Name: freight, Origin: kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "a"}}
	p.Status.FreightCollection = collection(freight)
	p.Status.FinishedAt = &t0
	if phase != kargoapi.PromotionPhaseSucceeded {
		p.Status.Message = "step 1 failed"
	}
	return p
}

type wantCond struct {
	status          metav1.ConditionStatus
	reason, message string
}

// It reads better whole: its cases are one table, a line each.
func TestReconcileWithPromotions(t *testing.T) {
	stubVerificationID(t)
	successful := kargoapi.VerificationInfo{Phase: kargoapi.VerificationPhaseSuccessful, StartTime: &t0, FinishTime: &t0}
	running := kargoapi.VerificationInfo{ID: "v", Phase: kargoapi.VerificationPhaseRunning}

	cases := []struct {
		name   string
		stage  func() *kargoapi.Stage
		promos []*kargoapi.Promotion
		// verifier follows verifications (nil: Rollouts disabled).
		verifier Verifier
		// wantCurrent is status.currentPromotion.name ("" = none),
		// wantLast status.lastPromotion.name, wantHistory the names of the
		// Freight in status.freightHistory, newest first.
		wantCurrent, wantCurrentFreight, wantLast string
		wantHistory                               []string
		wantConds                                 map[string]*wantCond // nil = absent
		wantGeneration                            int64
	}{
		{
			name:        "new Promotion, no Freight: it becomes current, Stage promoting",
			stage:       func() *kargoapi.Stage { return regularStage(1, 1) },
			promos:      []*kargoapi.Promotion{promo("test.02", "")},
			wantCurrent: "test.02",
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypePromoting:   {metav1.ConditionTrue, "ActivePromotion", `Promotion "test.02" is currently `},
				kargoapi.ConditionTypeReady:       {metav1.ConditionFalse, "ActivePromotion", `Promotion "test.02" is currently `},
				kargoapi.ConditionTypeReconciling: {metav1.ConditionTrue, "Reconciling", ""},
				kargoapi.ConditionTypeHealthy:     {metav1.ConditionUnknown, "NoFreight", "Stage has no current Freight"},
				kargoapi.ConditionTypeVerified:    {metav1.ConditionUnknown, "NoFreight", "Stage has no current Freight to verify"},
			},
		},
		{
			name: "other Stages' Promotions are ignored",
			stage: func() *kargoapi.Stage {
				return regularStage(1, 1)
			},
			promos: func() []*kargoapi.Promotion {
				p := promo("other.01", kargoapi.PromotionPhaseRunning)
				p.Spec.Stage = "other"
				return []*kargoapi.Promotion{p}
			}(),
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypePromoting:   nil,
				kargoapi.ConditionTypeReconciling: nil,
				kargoapi.ConditionTypeReady:       {metav1.ConditionFalse, "NoFreight", "Stage has no current Freight"},
			},
		},
		{
			name: "current Promotion running: Freight recorded, a newer one waits",
			stage: func() *kargoapi.Stage {
				s := regularStage(1, 1)
				s.Status.CurrentPromotion = &kargoapi.PromotionReference{Name: "test.02"}
				return s
			},
			promos: func() []*kargoapi.Promotion {
				p := promo("test.02", kargoapi.PromotionPhaseRunning)
				p.Status.Freight = &kargoapi.FreightReference{Name: "f2"}
				return []*kargoapi.Promotion{promo("test.03", kargoapi.PromotionPhasePending), p}
			}(),
			wantCurrent: "test.02", wantCurrentFreight: "f2",
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypePromoting: {metav1.ConditionTrue, "ActivePromotion", `Promotion "test.02" is currently Running`},
				kargoapi.ConditionTypeReady:     {metav1.ConditionFalse, "ActivePromotion", `Promotion "test.02" is currently Running`},
			},
		},
		{
			name: "current Promotion succeeded: Freight recorded, healthy, verified, Ready",
			stage: func() *kargoapi.Stage {
				s := regularStage(2, 1)
				s.Status.CurrentPromotion = &kargoapi.PromotionReference{Name: "test.02"}
				return s
			},
			promos:      []*kargoapi.Promotion{finished("test.02", kargoapi.PromotionPhaseSucceeded, "f2")},
			wantLast:    "test.02",
			wantHistory: []string{"f2"},
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypePromoting:   nil,
				kargoapi.ConditionTypeReconciling: nil,
				kargoapi.ConditionTypeHealthy:     {metav1.ConditionTrue, "Healthy", "Stage is healthy (performed 0 health checks)"},
				kargoapi.ConditionTypeVerified:    {metav1.ConditionTrue, "Verified", "Freight has been verified"},
				kargoapi.ConditionTypeReady:       {metav1.ConditionTrue, "Verified", "Freight has been verified"},
			},
			wantGeneration: 2,
		},
		{
			name: "current Promotion failed: recorded as last, Freight unchanged, not Ready",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(1, 1))
				s.Status.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{successful}
				s.Status.CurrentPromotion = &kargoapi.PromotionReference{Name: "test.02"}
				return s
			},
			promos:      []*kargoapi.Promotion{finished("test.02", kargoapi.PromotionPhaseFailed, "f2")},
			wantLast:    "test.02",
			wantHistory: []string{"f1"},
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypePromoting: nil,
				kargoapi.ConditionTypeHealthy:   {metav1.ConditionUnknown, "LastPromotionFailed", MsgLastPromotionFailed},
				kargoapi.ConditionTypeReady:     {metav1.ConditionFalse, "LastPromotionFailed", "step 1 failed"},
			},
		},
		{
			name: "several finished since the last recorded: oldest first, only successes enter the history",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(1, 1)) // last: test.01 with f1
				s.Status.CurrentPromotion = &kargoapi.PromotionReference{Name: "test.04"}
				return s
			},
			promos: []*kargoapi.Promotion{
				finished("test.01", kargoapi.PromotionPhaseSucceeded, "f1"),
				finished("test.02", kargoapi.PromotionPhaseSucceeded, "f2"),
				finished("test.03", kargoapi.PromotionPhaseAborted, "f3"),
				finished("test.04", kargoapi.PromotionPhaseSucceeded, "f4"),
			},
			wantLast:    "test.04",
			wantHistory: []string{"f4", "f2", "f1"},
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypeReady: {metav1.ConditionTrue, "Verified", "Freight has been verified"},
			},
			wantGeneration: 1,
		},
		{
			name: "current finished, another pending: finish first (the next starts on the next pass)",
			stage: func() *kargoapi.Stage {
				s := regularStage(1, 1)
				s.Status.CurrentPromotion = &kargoapi.PromotionReference{Name: "test.02"}
				return s
			},
			promos: []*kargoapi.Promotion{
				finished("test.02", kargoapi.PromotionPhaseSucceeded, "f2"),
				promo("test.03", kargoapi.PromotionPhasePending),
			},
			wantLast:    "test.02",
			wantHistory: []string{"f2"},
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypePromoting:   nil,
				kargoapi.ConditionTypeReady:       {metav1.ConditionTrue, "Verified", "Freight has been verified"},
				kargoapi.ConditionTypeReconciling: nil, // removed with Ready
			},
			wantGeneration: 1,
		},
		{
			name: "current Freight verified: the next pending Promotion starts",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(1, 1))
				s.Status.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{successful}
				s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
				return s
			},
			promos:      []*kargoapi.Promotion{finished("test.01", kargoapi.PromotionPhaseSucceeded, "f1"), promo("test.03", kargoapi.PromotionPhasePending)},
			wantCurrent: "test.03",
			wantLast:    "test.01",
			wantHistory: []string{"f1"},
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypePromoting: {metav1.ConditionTrue, "ActivePromotion", `Promotion "test.03" is currently Pending`},
				kargoapi.ConditionTypeReady:     {metav1.ConditionFalse, "ActivePromotion", `Promotion "test.03" is currently Pending`},
			},
		},
		{
			name: "current Freight being verified: the queue is held",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(1, 1))
				s.Spec.Verification = &kargoapi.Verification{}
				s.Status.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{running}
				s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
				return s
			},
			promos:      []*kargoapi.Promotion{promo("test.03", kargoapi.PromotionPhasePending)},
			verifier:    &fakeVerifier{result: &running},
			wantLast:    "test.01",
			wantHistory: []string{"f1"},
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypePromoting:   nil,
				kargoapi.ConditionTypeReconciling: {metav1.ConditionTrue, "Reconciling", ""},
				kargoapi.ConditionTypeVerified:    {metav1.ConditionUnknown, "VerificationRunning", "Freight is currently being verified"},
			},
		},
		{
			name: "unhealthy Stage, unverified Freight: the next Promotion may fix it",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(1, 1))
				s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateUnhealthy}
				return s
			},
			promos:      []*kargoapi.Promotion{promo("test.03", kargoapi.PromotionPhasePending)},
			wantCurrent: "test.03",
			wantLast:    "test.01",
			wantHistory: []string{"f1"},
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypePromoting: {metav1.ConditionTrue, "ActivePromotion", `Promotion "test.03" is currently Pending`},
			},
		},
		{
			name: "only terminal Promotions, none current: not promoting",
			stage: func() *kargoapi.Stage {
				s := withFreight(regularStage(1, 1))
				s.Status.Conditions = []metav1.Condition{cond(kargoapi.ConditionTypePromoting, metav1.ConditionTrue, "ActivePromotion", "x", 1, t0)}
				return s
			},
			promos:      []*kargoapi.Promotion{finished("test.01", kargoapi.PromotionPhaseSucceeded, "f1")},
			wantLast:    "test.01",
			wantHistory: []string{"f1"},
			wantConds: map[string]*wantCond{
				kargoapi.ConditionTypePromoting: nil,
				kargoapi.ConditionTypeReady:     {metav1.ConditionTrue, "Verified", "Freight has been verified"},
			},
			wantGeneration: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.stage()
			before := s.DeepCopy()
			st, changed := ReconcileStage(s, Inputs{Promotions: tc.promos, Verifier: tc.verifier}, t1)
			if !changed {
				t.Error("not changed")
			}
			if s.Status.CurrentPromotion != nil && before.Status.CurrentPromotion == nil || len(s.Status.Conditions) != len(before.Status.Conditions) {
				t.Error("the Stage was modified")
			}
			var cur, curFreight, last string
			if st.CurrentPromotion != nil {
				cur = st.CurrentPromotion.Name
				if st.CurrentPromotion.Freight != nil {
					curFreight = st.CurrentPromotion.Freight.Name
				}
			}
			if st.LastPromotion != nil {
				last = st.LastPromotion.Name
			}
			if cur != tc.wantCurrent || curFreight != tc.wantCurrentFreight || last != tc.wantLast {
				t.Errorf("current %q (freight %q), last %q; want %q (%q), %q", cur, curFreight, last, tc.wantCurrent, tc.wantCurrentFreight, tc.wantLast)
			}
			var history []string
			for _, c := range st.FreightHistory {
				for _, r := range c.References() {
					history = append(history, r.Name)
				}
			}
			if len(history) != len(tc.wantHistory) {
				t.Errorf("history %v, want %v", history, tc.wantHistory)
			} else {
				for i := range history {
					if history[i] != tc.wantHistory[i] {
						t.Errorf("history %v, want %v", history, tc.wantHistory)
					}
				}
			}
			for typ, want := range tc.wantConds {
				c := meta.FindStatusCondition(st.Conditions, typ)
				switch {
				case want == nil && c != nil:
					t.Errorf("%s: %+v, want none", typ, c)
				case want != nil && c == nil:
					t.Errorf("%s missing", typ)
				case want != nil && (c.Status != want.status || c.Reason != want.reason || c.Message != want.message):
					t.Errorf("%s: %s/%s %q, want %s/%s %q", typ, c.Status, c.Reason, c.Message, want.status, want.reason, want.message)
				}
			}
			if st.ObservedGeneration != tc.wantGeneration {
				t.Errorf("observedGeneration %d, want %d", st.ObservedGeneration, tc.wantGeneration)
			}
		})
	}
}

// TestPromotionLifecycle walks a Stage through two Promotions as a
// controller would: reconcile, run the current Promotion, reconcile.
func TestPromotionLifecycle(t *testing.T) {
	stubVerificationID(t)
	s := regularStage(1, 1)
	p1 := promo("test.01", "")
	p2 := promo("test.02", kargoapi.PromotionPhasePending)
	reconcile := func(now metav1.Time, promos ...*kargoapi.Promotion) {
		t.Helper()
		st, _ := ReconcileWithPromotions(s, promos, now)
		s.Status = st
	}
	ready := func() *metav1.Condition {
		return meta.FindStatusCondition(s.Status.Conditions, kargoapi.ConditionTypeReady)
	}

	reconcile(t0, p1, p2)
	if s.Status.CurrentPromotion == nil || s.Status.CurrentPromotion.Name != "test.01" || NextPromotion([]*kargoapi.Promotion{p1, p2}) != p1 {
		t.Fatalf("first: current %+v", s.Status.CurrentPromotion)
	}
	if VerifiedFreight(s) != nil {
		t.Error("verified Freight before any")
	}

	p1.Status.Phase = kargoapi.PromotionPhaseRunning
	reconcile(t0, p1, p2)
	if s.Status.CurrentPromotion.Name != "test.01" || ready().Message != `Promotion "test.01" is currently Running` {
		t.Fatalf("running: %+v", ready())
	}

	*p1 = *finished("test.01", kargoapi.PromotionPhaseSucceeded, "f1")
	reconcile(t1, p1, p2)
	if s.Status.CurrentPromotion != nil || ready().Status != metav1.ConditionTrue || s.Status.FreightSummary != "f1" {
		t.Fatalf("succeeded: current %+v, ready %+v, summary %q", s.Status.CurrentPromotion, ready(), s.Status.FreightSummary)
	}
	if got := VerifiedFreight(s); len(got) != 1 || got[0] != "f1" {
		t.Errorf("VerifiedFreight = %v", got)
	}
	f1 := &kargoapi.Freight{ObjectMeta: metav1.ObjectMeta{Name: "f1", Namespace: "kargo-demo"}}
	if !MarkFreightVerified(f1, s) || !f1.Status.VerifiedIn["test"].VerifiedAt.Equal(&t1) || MarkFreightVerified(f1, s) {
		t.Errorf("MarkFreightVerified: %+v", f1.Status)
	}
	if MarkFreightVerified(&kargoapi.Freight{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, s) {
		t.Error("marked Freight not in the Stage")
	}

	// The queue moves on.
	reconcile(t1, p1, p2)
	if s.Status.CurrentPromotion == nil || s.Status.CurrentPromotion.Name != "test.02" {
		t.Fatalf("second: current %+v", s.Status.CurrentPromotion)
	}
	if VerifiedFreight(s) == nil {
		t.Error("the current Freight stays verified while the next Promotion runs")
	}
	*p2 = *finished("test.02", kargoapi.PromotionPhaseSucceeded, "f2")
	reconcile(t1, p1, p2)
	if len(s.Status.FreightHistory) != 2 || s.Status.LastPromotion.Name != "test.02" || ready().Status != metav1.ConditionTrue {
		t.Fatalf("second succeeded: %+v", s.Status)
	}
	// Steady: nothing changes.
	if _, changed := ReconcileWithPromotions(s, []*kargoapi.Promotion{p1, p2}, t1); changed {
		t.Error("changed when steady")
	}
}

func TestVerifiedFreight(t *testing.T) {
	successful := kargoapi.VerificationInfo{Phase: kargoapi.VerificationPhaseSuccessful, FinishTime: &t0}
	cases := []struct {
		name  string
		stage func() *kargoapi.Stage
		want  int
	}{
		{"no Freight", func() *kargoapi.Stage { return regularStage(1, 1) }, 0},
		{"healthy, verified", func() *kargoapi.Stage {
			s := withFreight(regularStage(1, 1))
			s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
			s.Status.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{successful}
			return s
		}, 1},
		{"not healthy", func() *kargoapi.Stage {
			s := withFreight(regularStage(1, 1))
			s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateUnknown}
			s.Status.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{successful}
			return s
		}, 0},
		{"latest verification failed", func() *kargoapi.Stage {
			s := withFreight(regularStage(1, 1))
			s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
			s.Status.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{{Phase: kargoapi.VerificationPhaseFailed}, successful}
			return s
		}, 0},
		{"not verified yet", func() *kargoapi.Stage {
			s := withFreight(regularStage(1, 1))
			s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
			return s
		}, 0},
		{"two origins", func() *kargoapi.Stage {
			s := withFreight(regularStage(1, 2))
			s.Status.FreightHistory[0].UpdateOrPush(kargoapi.FreightReference{Name: "g1", Origin: s.Spec.RequestedFreight[1].Origin})
			s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
			s.Status.FreightHistory[0].VerificationHistory = kargoapi.VerificationInfoStack{successful}
			return s
		}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := VerifiedFreight(tc.stage()); len(got) != tc.want {
				t.Errorf("VerifiedFreight = %v, want %d", got, tc.want)
			}
		})
	}
}
