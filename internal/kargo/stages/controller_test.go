package stages

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
)

func TestStageKeyOf(t *testing.T) {
	p := &kargoapi.Promotion{ObjectMeta: metav1.ObjectMeta{Name: "s.01j.abc", Namespace: "p"}, Spec: kargoapi.PromotionSpec{Stage: "s"}}
	tests := []struct {
		name string
		obj  any
		want string // "" = no Stage
	}{
		{"a Promotion wakes its Stage", p, "p/s"},
		{"not a Promotion", &kargoapi.Stage{}, ""},
		// The informer's tombstone of a Promotion deleted while its watch
		// was down is not read (as before the move).
		{"a tombstone", cache.DeletedFinalStateUnknown{Key: "p/s.01j.abc", Obj: p}, ""},
	}
	for _, tc := range tests {
		key, ok := stageKeyOf(tc.obj)
		if ok != (tc.want != "") || key != tc.want {
			t.Errorf("%s: stageKeyOf = %q, %v; want %q", tc.name, key, ok, tc.want)
		}
	}
}

func TestStatusUpdate(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 987654321, time.UTC)
	fresh := validStage("s")
	fresh.Namespace, fresh.Generation = "p", 1

	// What the controller writes for a new Stage, as read back.
	first := statusUpdate(fresh, rules.Inputs{}, now)
	if first == nil {
		t.Fatal("a new Stage: no status to write")
	}
	if first == fresh || fresh.Status.FreightSummary != "" {
		t.Error("statusUpdate changed the cached Stage; it must write a copy")
	}
	for _, c := range first.Status.Conditions {
		if !c.LastTransitionTime.Equal(&metav1.Time{Time: now.Truncate(time.Second)}) {
			t.Errorf("condition %s at %v, want %v (whole seconds)", c.Type, c.LastTransitionTime, now.Truncate(time.Second))
		}
	}
	if first.Status.FreightSummary != "0/1 Fulfilled" {
		t.Errorf("freight summary %q", first.Status.FreightSummary)
	}

	tests := []struct {
		name   string
		stage  func() *kargoapi.Stage
		promos []*kargoapi.Promotion
		now    time.Time
		write  bool
	}{
		{name: "what it has: nothing to write, later in the same second", write: false,
			stage: func() *kargoapi.Stage { return first.DeepCopy() }, now: now.Add(10 * time.Millisecond)},
		{name: "what it has: nothing to write, a minute later", write: false,
			stage: func() *kargoapi.Stage { return first.DeepCopy() }, now: now.Add(time.Minute)},
		{name: "a refresh is handled", write: true, now: now, stage: func() *kargoapi.Stage {
			s := first.DeepCopy()
			s.Annotations = map[string]string{kargoapi.AnnotationKeyRefresh: "token"}
			return s
		}},
		{name: "a new Promotion of it", write: true, now: now, stage: func() *kargoapi.Stage { return first.DeepCopy() },
			promos: []*kargoapi.Promotion{{ObjectMeta: metav1.ObjectMeta{Name: "s.01j.abc", Namespace: "p"},
				Spec: kargoapi.PromotionSpec{Stage: "s", Freight: "abc"}}}},
		{name: "another Stage's Promotion", write: false, now: now, stage: func() *kargoapi.Stage { return first.DeepCopy() },
			promos: []*kargoapi.Promotion{{ObjectMeta: metav1.ObjectMeta{Name: "t.01j.abc", Namespace: "p"},
				Spec: kargoapi.PromotionSpec{Stage: "t", Freight: "abc"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.stage()
			next := statusUpdate(s, rules.Inputs{Promotions: tc.promos}, tc.now)
			if (next != nil) != tc.write {
				t.Fatalf("write %v, want %v (status %+v)", next != nil, tc.write, next)
			}
			if next != nil && next.ResourceVersion != s.ResourceVersion {
				t.Errorf("the write is not from the cached version")
			}
		})
	}
	refreshed := first.DeepCopy()
	refreshed.Annotations = map[string]string{kargoapi.AnnotationKeyRefresh: "token"}
	if next := statusUpdate(refreshed, rules.Inputs{}, now); next == nil || next.Status.LastHandledRefresh != "token" {
		t.Errorf("refresh: %+v", next)
	}
}

// What wakes a Stage for auto-promotion: Freight of an origin it requests,
// newly verified or approved; any change of its project's config.
func TestAutoPromotionWakeUps(t *testing.T) {
	w := kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "w"}
	s := validStage("s")
	s.Spec.RequestedFreight = []kargoapi.FreightRequest{{Origin: w, Sources: kargoapi.FreightSources{Direct: true}}}
	if !requests(s, w) || requests(s, kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "x"}) {
		t.Error("requests: the Stage requests w and not x")
	}

	f := &kargoapi.Freight{ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: "p"}, Origin: w}
	verified, approved, moved, labelled := f.DeepCopy(), f.DeepCopy(), f.DeepCopy(), f.DeepCopy()
	verified.Status.AddVerifiedStage("s", time.Now())
	approved.Status.AddApprovedStage("s", time.Now())
	moved.Status.AddCurrentStage("s", time.Now())
	labelled.Labels = map[string]string{"a": "b"}
	tests := []struct {
		name     string
		old, obj any
		want     bool
	}{
		{"verified", f, verified, true},
		{"approved", f, approved, true},
		{"in a Stage, not yet verified there", f, moved, false},
		{"a label", f, labelled, false},
		{"not Freight", s, s, false},
	}
	for _, tc := range tests {
		if got := availabilityChanged(tc.old, tc.obj); got != tc.want {
			t.Errorf("%s: availabilityChanged = %v, want %v", tc.name, got, tc.want)
		}
	}

	cfg := &kargoapi.ProjectConfig{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "p"}}
	for _, obj := range []any{cfg, cache.DeletedFinalStateUnknown{Key: "p/p", Obj: cfg}} {
		if got := projectOf(obj); got != "p" {
			t.Errorf("projectOf(%T) = %q, want p", obj, got)
		}
	}
}
