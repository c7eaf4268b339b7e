package app

import (
	"slices"
	"testing"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/executor/plugins/echo"
	"taskactions/internal/executor/plugins/process"
	"taskactions/internal/executor/plugins/sleep"
)

// New actions carry the executor's finalizer only when the executor runs
// them and their plugin may leave something behind to clean up.
func TestExecutorFinalizers(t *testing.T) {
	runs := map[string]plugins.Plugin{"echo": echo.Plugin{}, "sleep": sleep.Plugin{}, "process": process.New("i", nil)}
	for _, tc := range []struct {
		claims, taskType string
		want             bool
	}{
		{"*", "process", true},
		{"*", "echo", false},
		{"*", "sleep", false},
		{"echo,sleep", "process", false}, // not claimed: another executor's
		{"external", "external", true},   // claimed, no plugin: to fail it, the executor holds it
	} {
		got := slices.Contains(executorFinalizers(tc.claims, runs)(tc.taskType), v1.FinalizerPlugin)
		if got != tc.want {
			t.Errorf("claims %q, type %q: finalizer %v, want %v", tc.claims, tc.taskType, got, tc.want)
		}
	}
}
