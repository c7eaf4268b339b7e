package app

import (
	"testing"

	"taskactions/internal/executor/plugins"
	"taskactions/internal/executor/plugins/echo"
	"taskactions/internal/executor/plugins/sleep"
)

// The executor claims every type it has a plugin for on the embedded
// control plane, and nothing against a cluster, where another executor
// (Flyte's) may own the actions, unless told.
func TestClaimedTaskTypes(t *testing.T) {
	pl := map[string]plugins.Plugin{"echo": echo.Plugin{}, "sleep": sleep.Plugin{}}
	for _, tc := range []struct {
		flag     string
		embedded bool
		want     string
	}{
		{"auto", true, "echo,sleep"},
		{"auto", false, ""},
		{"*", false, "echo,sleep"},
		{"", true, ""},
		{"echo,python", false, "echo,python"},
	} {
		if got := claimedTaskTypes(tc.flag, tc.embedded, pl); got != tc.want {
			t.Errorf("%q (embedded %v): %q, want %q", tc.flag, tc.embedded, got, tc.want)
		}
	}
}
