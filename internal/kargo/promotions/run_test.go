package promotions

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
)

func TestRunName(t *testing.T) {
	built, err := rules.BuildPromotion(stage("dev", "", true), "abc1234def", "", time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ulid := strings.Split(built.Name, ".")[1]
	tests := []struct {
		name string
		want string // "" = a hash
	}{
		{built.Name, ulid},
		{"dev.01JABCDEFGHJKMNPQRSTVWXYZ0.abc1234", "01jabcdefghjkmnpqrstvwxyz0"},
		{"my.stage.01JABCDEFGHJKMNPQRSTVWXYZ0.abc1234", "01jabcdefghjkmnpqrstvwxyz0"},
		{"by-kubectl", ""},
		{"dev.short.abc1234", ""},
	}
	for _, tc := range tests {
		got := runName(tc.name)
		if tc.want != "" && got != tc.want {
			t.Errorf("runName(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if tc.want == "" && (len(got) != 26 || got[0] != 'p' || got == runName(tc.name+"x")) {
			t.Errorf("runName(%q) = %q, want p and 25 hex digits, one per name", tc.name, got)
		}
	}
	p := built.DeepCopy()
	p.ObjectMeta = metav1.ObjectMeta{Name: built.Name, Namespace: "proj"}
	if r := RunOf(p); r.Project != "proj" || r.Domain != Domain || r.Run != ulid {
		t.Errorf("RunOf = %+v", r)
	}
}

func TestStepAction(t *testing.T) {
	tests := []struct {
		i, start int
		name     string
	}{
		{0, 1, "step-1"},
		{9, 1, "step-10"},
		{0, 2, "step-1-start-2"},
		{11, 30, "step-12-start-30"},
	}
	for _, tc := range tests {
		if got := StepAction(tc.i, tc.start); got != tc.name {
			t.Errorf("StepAction(%d, %d) = %q, want %q", tc.i, tc.start, got, tc.name)
		}
		if i, start, ok := ParseStepAction(tc.name); !ok || i != tc.i || start != tc.start {
			t.Errorf("ParseStepAction(%q) = %d, %d, %v", tc.name, i, start, ok)
		}
	}
	// Names StepAction does not make: an action enqueued by hand with a
	// step's task type is no step.
	for _, name := range []string{"step-0", "step-01", "step-x", "step-1-start-1", "step-1-start-0",
		"step-1-start-", "step-1-start-02", "promotion", "step-", "step-1-again-2", "step-1-start-2-start-3"} {
		if i, start, ok := ParseStepAction(name); ok {
			t.Errorf("ParseStepAction(%q) = %d, %d, true; want no step", name, i, start)
		}
	}
}

func TestStartOf(t *testing.T) {
	for value, want := range map[string]int{"": 1, "1": 1, "2": 2, "17": 17, "0": 1, "-3": 1, "x": 1} {
		p := &kargoapi.Promotion{}
		if value != "" {
			p.Annotations = map[string]string{StartAnnotation: value}
		}
		if got := StartOf(p); got != want {
			t.Errorf("StartOf(%q) = %d, want %d", value, got, want)
		}
	}
}
