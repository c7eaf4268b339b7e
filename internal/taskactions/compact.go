package taskactions

import (
	"unique"

	v1 "taskactions/api/v1"
)

// compact makes a cached action share the strings that repeat from one
// action to the next (label keys, project and run names, the parent,
// phases, condition reasons and messages) with the others, instead of
// holding the copies its decoding made. The cache keeps every live action;
// these strings were about a quarter of each one's decoded size. Names
// that identify one action (its own name, uid, input URI) are left as
// they are: interning them would cost, not save. unique keeps a canonical
// copy while a handle to it lives, and this keeps none: actions decoded
// between two collections share one copy, those of the next share
// another, and none is held after the last action using it goes.
func compact(ta *v1.TaskAction) {
	ta.Namespace = intern(ta.Namespace)
	ta.Labels = compactLabels(ta.Labels)
	for i := range ta.OwnerReferences {
		r := &ta.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
	}
	compactSpec(&ta.Spec)
	compactStatus(&ta.Status)
}

// fullSmallMap is the size of a full Go small map (one group of 8 slots).
const fullSmallMap = 8

// compactLabels makes the labels share their strings. Storing under an
// equal key replaces the key the map holds too, so a map is rewritten in
// place, without allocating, except a full small map: storing into one
// makes it a hashed table first, even for a key it has (616 bytes more per
// action, and its small map left behind), so it is copied into a new small
// map of 336 bytes instead. Our actions carry 8 labels once their status
// is recorded.
func compactLabels(labels map[string]string) map[string]string {
	if len(labels) != fullSmallMap {
		for k, v := range labels {
			labels[intern(k)] = intern(v)
		}
		return labels
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[intern(k)] = intern(v)
	}
	return out
}

func compactSpec(s *v1.TaskActionSpec) {
	s.Project, s.Domain, s.RunName = intern(s.Project), intern(s.Domain), intern(s.RunName)
	if s.ParentActionName != nil {
		*s.ParentActionName = intern(*s.ParentActionName)
	}
	s.ActionType, s.TaskType = intern(s.ActionType), intern(s.TaskType)
	s.ShortName, s.Group, s.RunOutputBase = intern(s.ShortName), intern(s.Group), intern(s.RunOutputBase)
}

// compactStatus interns a running action's phases and reasons, and a
// finished one's messages and plugin state too. A running action's
// messages change with each update (a progress line, an attempt count):
// a string seen once is all cost to intern (a canonical copy and its weak
// reference on every event), while a finished action keeps its for good
// and shares them with thousands ("echoed the inputs").
func compactStatus(st *v1.TaskActionStatus) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status, c.Reason = intern(c.Type), intern(c.Status), intern(c.Reason)
	}
	for i := range st.PhaseHistory {
		st.PhaseHistory[i].Phase = intern(st.PhaseHistory[i].Phase)
	}
	if !v1.PhaseOf(st.Conditions).Terminal() {
		return
	}
	st.StateJSON, st.PluginPhase = intern(st.StateJSON), intern(st.PluginPhase)
	for i := range st.Conditions {
		st.Conditions[i].Message = intern(st.Conditions[i].Message)
	}
	for i := range st.PhaseHistory {
		st.PhaseHistory[i].Message = intern(st.PhaseHistory[i].Message)
	}
}

// intern returns the canonical copy of s. Long strings are rarely shared
// and are left alone.
func intern[S ~string](s S) S {
	if s == "" || len(s) > 256 {
		return s
	}
	return S(unique.Make(string(s)).Value())
}
