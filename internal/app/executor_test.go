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
		outside  bool // an executor outside may run the other types
	}{
		{"auto", true, "echo,sleep", false},
		{"auto", false, "", true},
		{"*", false, "echo,sleep", true},
		{"*", true, "echo,sleep", true},
		{"", true, "", true},
		{"echo,python", false, "echo,python", true},
	} {
		if got := claimedTaskTypes(tc.flag, tc.embedded, pl); got != tc.want {
			t.Errorf("%q (embedded %v): %q, want %q", tc.flag, tc.embedded, got, tc.want)
		}
		if got := outsideExecutor(tc.flag, tc.embedded); got != tc.outside {
			t.Errorf("%q (embedded %v): outside %v, want %v", tc.flag, tc.embedded, got, tc.outside)
		}
		es := executorSetup{plugins: pl, claims: claimedTaskTypes(tc.flag, tc.embedded, pl), outside: outsideExecutor(tc.flag, tc.embedded)}
		if got := es.pending("spark"); (got != "") != tc.outside {
			t.Errorf("%q (embedded %v): a spark action waits with %q", tc.flag, tc.embedded, got)
		}
		if got := es.pending("echo"); got != "" && tc.want != "" {
			t.Errorf("%q (embedded %v): an echo action waits with %q", tc.flag, tc.embedded, got)
		}
	}
}
