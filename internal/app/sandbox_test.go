package app

import (
	"strings"
	"testing"
)

// Without Landlock, process tasks run (with a warning) only where the
// user said so or on loopback; auto off loopback and required refuse them
// with a reason that names the flag.
func TestWithoutLandlock(t *testing.T) {
	for _, tc := range []struct {
		mode     string
		loopback bool
		refused  bool
	}{
		{"auto", true, false},
		{"auto", false, true},
		{"required", true, true},
		{"required", false, true},
		{"best-effort", true, false},
		{"best-effort", false, false},
	} {
		got := withoutLandlock(tc.mode, tc.loopback)
		if (got != "") != tc.refused {
			t.Errorf("%s, loopback %v: refusal %q, want refused %v", tc.mode, tc.loopback, got, tc.refused)
		}
		if got != "" && !strings.Contains(got, "--process-sandbox="+tc.mode) {
			t.Errorf("%s: the refusal %q does not name the flag", tc.mode, got)
		}
	}
}
