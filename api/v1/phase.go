package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is the public phase of an action, as the HTTP API, the streams and
// the run service name it. It is derived from the conditions.
type Phase string

// Public phases.
const (
	PhaseUnspecified         Phase = "UNSPECIFIED"
	PhaseQueued              Phase = "QUEUED"
	PhaseWaitingForResources Phase = "WAITING_FOR_RESOURCES"
	PhaseInitializing        Phase = "INITIALIZING"
	PhaseRunning             Phase = "RUNNING"
	PhaseSucceeded           Phase = "SUCCEEDED"
	PhaseFailed              Phase = "FAILED"
	PhaseAborted             Phase = "ABORTED"
	PhaseTimedOut            Phase = "TIMED_OUT"
)

// ReasonWaitingForResources is the Progressing reason of
// WAITING_FOR_RESOURCES, which the seed's reasons do not name.
const ReasonWaitingForResources = "WaitingForResources"

// Phases lists every public phase in lifecycle order.
var Phases = []Phase{
	PhaseUnspecified, PhaseQueued, PhaseWaitingForResources, PhaseInitializing,
	PhaseRunning, PhaseSucceeded, PhaseFailed, PhaseAborted, PhaseTimedOut,
}

// Terminal reports whether the phase can never change again.
func (p Phase) Terminal() bool {
	switch p {
	case PhaseSucceeded, PhaseFailed, PhaseAborted, PhaseTimedOut:
		return true
	}
	return false
}

// Valid reports whether p is one of Phases.
func (p Phase) Valid() bool {
	for _, q := range Phases {
		if p == q {
			return true
		}
	}
	return false
}

// progressingPhases maps Progressing reasons to phases.
var progressingPhases = map[string]Phase{
	ReasonQueued:              PhaseQueued,
	ReasonWaitingForResources: PhaseWaitingForResources,
	ReasonInitializing:        PhaseInitializing,
	ReasonExecuting:           PhaseRunning,
}

// PhaseOf maps conditions to the public phase: Succeeded=True is SUCCEEDED;
// Failed=True is TIMED_OUT or ABORTED by its reason, FAILED otherwise; a
// Progressing reason gives the running phases. An action nobody has
// touched yet is QUEUED: enqueueing is what queues it.
func PhaseOf(conds []metav1.Condition) Phase {
	var progressing *metav1.Condition
	for i := range conds {
		c := &conds[i]
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch c.Type {
		case ConditionSucceeded:
			return PhaseSucceeded
		case ConditionFailed:
			switch c.Reason {
			case ReasonTimedOut:
				return PhaseTimedOut
			case ReasonAborted:
				return PhaseAborted
			}
			return PhaseFailed
		case ConditionProgressing:
			progressing = c
		}
	}
	if progressing != nil {
		if p, ok := progressingPhases[progressing.Reason]; ok {
			return p
		}
	}
	return PhaseQueued
}

// PhaseOfReason maps a phase-history entry (a condition reason) to the
// public phase, so the API shows history in the same names as the phase.
func PhaseOfReason(reason string) Phase {
	if p, ok := progressingPhases[reason]; ok {
		return p
	}
	switch reason {
	case ReasonCompleted:
		return PhaseSucceeded
	case ReasonTimedOut:
		return PhaseTimedOut
	case ReasonAborted:
		return PhaseAborted
	case ReasonRetryableFailure, ReasonPermanentFailure, ReasonPluginNotFound, ReasonInvalidSpec:
		return PhaseFailed
	}
	return PhaseUnspecified
}
