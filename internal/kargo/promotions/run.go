package promotions

import (
	"fmt"
	"strconv"
	"strings"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
)

// A Promotion's run: project = the Promotion's project, domain "kargo",
// run name = the ULID in the Promotion's name; the root action is
// "promotion", step i the child "step-<i+1>" (its alias is its short
// name: aliases need not be valid action names). A Promotion started
// over (its working directory lost, see package orchestrator) runs its
// steps again as new children, "step-<i+1>-start-<n>" in its nth start:
// an action runs once, and the first start's stay as they ended.
const (
	Domain       = "kargo"
	RootAction   = "promotion"
	RootTaskType = "kargo-promotion" // no plugin claims it: the orchestrator reports its status
)

// RunOf is the run of a Promotion.
func RunOf(p *kargoapi.Promotion) v1.RunID {
	return v1.RunID{Project: p.Namespace, Domain: Domain, Run: runName(p.Name)}
}

// runName is the ULID of a name <stage>.<ULID>.<freight>, lowercased (26
// characters, a valid run name); a Promotion named otherwise (kubectl)
// gets a hash of its name.
func runName(name string) string { return v1.RunNameOf(name, "p") }

// StartAnnotation counts a Promotion's starts (absent: 1). The
// orchestrator raises it before it starts the steps over.
const StartAnnotation = "taskactions.io/promotion-start"

// StartOf is the start a Promotion's steps run in: 1, or more once it
// has started over.
func StartOf(p *kargoapi.Promotion) int {
	n, err := strconv.Atoi(p.Annotations[StartAnnotation])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// StepAction is the name of step i's child action in a Promotion's start.
func StepAction(i, start int) string {
	if start <= 1 {
		return fmt.Sprintf("step-%d", i+1)
	}
	return fmt.Sprintf("step-%d-start-%d", i+1, start)
}

// ParseStepAction is the step and start of an action StepAction named.
func ParseStepAction(action string) (i, start int, ok bool) {
	rest, found := strings.CutPrefix(action, "step-")
	if !found {
		return 0, 0, false
	}
	step, st, restarted := strings.Cut(rest, "-start-")
	start = 1
	n, err := strconv.Atoi(step)
	if restarted {
		if start, err = strconv.Atoi(st); err != nil {
			return 0, 0, false
		}
	}
	if err != nil || n < 1 || start < 1 || StepAction(n-1, start) != action {
		return 0, 0, false
	}
	return n - 1, start, true
}
