package taskactions

import (
	"slices"
	"strings"

	v1 "taskactions/api/v1"
)

// Filter selects the actions of a list or a stream that a client shows:
// by phase, and by a part of the name. The zero Filter selects every
// action.
type Filter struct {
	// Phases: only actions in one of them (none: any phase).
	Phases []v1.Phase
	// Name: only actions whose name or short name holds it, ignoring case
	// ("": any name).
	Name string
}

// IsZero reports whether f selects every action.
func (f Filter) IsZero() bool { return len(f.Phases) == 0 && f.Name == "" }

// Match reports whether f selects the action.
func (f Filter) Match(u *ActionUpdate) bool {
	if len(f.Phases) > 0 && !slices.Contains(f.Phases, u.Phase) {
		return false
	}
	return f.Name == "" || containsFold(u.ID.Name, f.Name) || containsFold(u.ShortName, f.Name)
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

// brief is what a filter reads of an action's previous view, which each
// event keeps beside the new one (pipeline.Kind.Brief): its identity, name
// and phase, not its whole view and encodings.
func brief(u *ActionUpdate) *ActionUpdate {
	return &ActionUpdate{Action: Action{ID: u.ID, UID: u.UID, Parent: u.Parent, ShortName: u.ShortName, Phase: u.Phase}, Deleted: u.Deleted}
}
