package executor

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// What is said of a task type no executor of this server runs: the
// action fails with it (Config.NoOutside), or, where an executor outside
// may run the type, it is the reason the action shows while it waits
// (Pending).

// Runs lists the task types the executor runs: claimed, with a plugin.
func (c *Controller) Runs() []string {
	var out []string
	for _, t := range slices.Sorted(maps.Keys(c.cfg.Plugins)) {
		if c.types.Claims(t) {
			out = append(out, t)
		}
	}
	return out
}

// unrunnable is the message of a PluginNotFound failure.
func (c *Controller) unrunnable(taskType string) string {
	return fmt.Sprintf("no executor of this server runs task type %q: it runs %s (--executor-task-types), and no executor outside is declared",
		taskType, typeList(c.Runs()))
}

// Pending is why an action of the task type waits where an executor
// outside may run it: empty when runs (the types this server's executor
// runs) has it.
func Pending(runs []string, taskType string) string {
	if slices.Contains(runs, taskType) {
		return ""
	}
	return fmt.Sprintf("no executor of this server runs task type %q (it runs %s); it waits for an executor outside to report its status",
		taskType, typeList(runs))
}

func typeList(types []string) string {
	if len(types) == 0 {
		return "none"
	}
	return strings.Join(types, ", ")
}
