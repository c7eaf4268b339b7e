package freight

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// TestFreightOf: the Freight a Stage holds, and what it has verified:
// its current collection once Healthy with a successful verification.
func TestFreightOf(t *testing.T) {
	stage := func(healthy bool, phase kargoapi.VerificationPhase) *kargoapi.Stage {
		s := &kargoapi.Stage{ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "p"},
			Spec: kargoapi.StageSpec{PromotionTemplate: &kargoapi.PromotionTemplate{Spec: kargoapi.PromotionTemplateSpec{
				Steps: []kargoapi.PromotionStep{{Uses: "git-clone"}}}}}}
		fc := &kargoapi.FreightCollection{}
		fc.UpdateOrPush(kargoapi.FreightReference{Name: "abc", Origin: warehouse})
		if phase != "" {
			fc.VerificationHistory.UpdateOrPush(kargoapi.VerificationInfo{Phase: phase, FinishTime: &metav1.Time{Time: time.Now()}})
		}
		s.Status.FreightHistory.Record(fc)
		if healthy {
			s.Status.Health = &kargoapi.Health{Status: kargoapi.HealthStateHealthy}
		}
		return s
	}
	tests := []struct {
		name     string
		s        *kargoapi.Stage
		verified bool
	}{
		{"healthy and verified", stage(true, kargoapi.VerificationPhaseSuccessful), true},
		{"healthy, not yet verified", stage(true, ""), false},
		{"verification failed", stage(true, kargoapi.VerificationPhaseFailed), false},
		{"verified but unhealthy", stage(false, kargoapi.VerificationPhaseSuccessful), false},
	}
	for _, tc := range tests {
		current, verified := freightOf(tc.s)
		if !reflect.DeepEqual(current, map[string]bool{"abc": true}) || verified["abc"] != tc.verified || len(verified) > 1 {
			t.Errorf("%s: current %v, verified %v; want abc current, verified %v", tc.name, current, verified, tc.verified)
		}
	}
	current, verified := freightOf(&kargoapi.Stage{})
	if len(current) != 0 || len(verified) != 0 {
		t.Errorf("a Stage without Freight: current %v, verified %v", current, verified)
	}
}

func TestSynced(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	hourAgo := &metav1.Time{Time: time.Now().Add(-time.Hour)}
	in := func(verified bool) *kargoapi.Freight {
		f := freight("abc")
		f.Status.CurrentlyIn = map[string]kargoapi.CurrentStage{"dev": {Since: hourAgo}}
		if verified {
			f.Status.VerifiedIn = map[string]kargoapi.VerifiedStage{"dev": {VerifiedAt: hourAgo}}
		}
		return f
	}
	tests := []struct {
		name              string
		f                 *kargoapi.Freight
		current, verified bool
		write             bool
		check             func(t *testing.T, st kargoapi.FreightStatus)
	}{
		{name: "arrives", f: freight("abc"), current: true, write: true, check: func(t *testing.T, st kargoapi.FreightStatus) {
			if c, ok := st.CurrentlyIn["dev"]; !ok || !c.Since.Time.Equal(now) {
				t.Errorf("currentlyIn %v, want dev since now", st.CurrentlyIn)
			}
		}},
		{name: "stays: nothing to write", f: in(false), current: true},
		{name: "leaves", f: in(false), write: true, check: func(t *testing.T, st kargoapi.FreightStatus) {
			if _, ok := st.CurrentlyIn["dev"]; ok {
				t.Errorf("still currentlyIn dev: %v", st.CurrentlyIn)
			}
		}},
		{name: "leaves after its verification: the soak is kept", f: in(true), write: true, check: func(t *testing.T, st kargoapi.FreightStatus) {
			if soak := st.VerifiedIn["dev"].LongestCompletedSoak; soak == nil || soak.Duration < time.Hour {
				t.Errorf("longest soak %v, want the hour it was in dev", soak)
			}
		}},
		{name: "verified", f: in(false), current: true, verified: true, write: true, check: func(t *testing.T, st kargoapi.FreightStatus) {
			if v, ok := st.VerifiedIn["dev"]; !ok || !v.VerifiedAt.Time.Equal(now) {
				t.Errorf("verifiedIn %v, want dev at now", st.VerifiedIn)
			}
		}},
		{name: "verified before: nothing to write", f: in(true), current: true, verified: true},
		{name: "not in it, not verified: nothing to write", f: freight("abc")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.f.DeepCopy()
			next := synced(tc.f, "dev", tc.current, tc.verified, now)
			if (next != nil) != tc.write {
				t.Fatalf("write %v, want %v", next != nil, tc.write)
			}
			if !reflect.DeepEqual(tc.f, before) {
				t.Error("synced changed the cached Freight; it must return a copy")
			}
			if next != nil {
				tc.check(t, next.Status)
			}
		})
	}
}
