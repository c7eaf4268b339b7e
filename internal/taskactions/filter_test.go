package taskactions

import (
	"testing"

	v1 "taskactions/api/v1"
)

func TestFilterMatch(t *testing.T) {
	u := &ActionUpdate{Action: Action{ID: ActionID{Name: "shard-7"}, ShortName: "Train", Phase: v1.PhaseFailed}}
	for _, c := range []struct {
		name string
		f    Filter
		want bool
	}{
		{"the zero filter", Filter{}, true},
		{"its phase", Filter{Phases: []v1.Phase{v1.PhaseRunning, v1.PhaseFailed}}, true},
		{"another phase", Filter{Phases: []v1.Phase{v1.PhaseRunning}}, false},
		{"a part of the name, another case", Filter{Name: "SHARD-7"}, true},
		{"a part of the short name", Filter{Name: "rai"}, true},
		{"a name it does not hold", Filter{Name: "shard-8"}, false},
		{"name and phase, both", Filter{Name: "shard", Phases: []v1.Phase{v1.PhaseFailed}}, true},
		{"name and phase, one", Filter{Name: "shard", Phases: []v1.Phase{v1.PhaseSucceeded}}, false},
	} {
		if got := c.f.Match(u); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if b := brief(u); !(Filter{Name: "train", Phases: []v1.Phase{v1.PhaseFailed}}).Match(b) || b.ShortName != "Train" {
		t.Errorf("brief %+v: a filter reads it as the view", b)
	}
}
