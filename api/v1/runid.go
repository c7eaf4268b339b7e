package v1

// RunID identifies a run: the project, domain and run name every action of
// it carries in its spec. The action manager, the run service and history
// all name runs with it. Not an API object: no deepcopy.
//
// +kubebuilder:object:generate=false
type RunID struct{ Project, Domain, Run string }
