package promotions

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	if StepAction(0) != "step-1" || StepAction(9) != "step-10" {
		t.Errorf("step actions %q, %q", StepAction(0), StepAction(9))
	}
}
