package promotions

import (
	"fmt"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
)

// A Promotion's run: project = the Promotion's project, domain "kargo",
// run name = the ULID in the Promotion's name; the root action is
// "promotion", step i the child "step-<i+1>" (its alias is its short
// name: aliases need not be valid action names).
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

// StepAction is the name of step i's child action.
func StepAction(i int) string { return fmt.Sprintf("step-%d", i+1) }
