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
	// PhasePaused: a condition action waits for its signal.
	PhasePaused Phase = "PAUSED"
	// PhaseRecovered: the action's outputs came from an earlier run.
	PhaseRecovered Phase = "RECOVERED"
)

// ReasonWaitingForResources is the Progressing reason of
// WAITING_FOR_RESOURCES, which the seed's reasons do not name (Flyte
// writes Queued then).
const ReasonWaitingForResources = "WaitingForResources"

// Phases lists every public phase, in the order of Flyte's ActionPhase
// enum (flyteidl2 common/phase.proto).
var Phases = []Phase{
	PhaseUnspecified, PhaseQueued, PhaseWaitingForResources, PhaseInitializing,
	PhaseRunning, PhaseSucceeded, PhaseFailed, PhaseAborted, PhaseTimedOut,
	PhasePaused, PhaseRecovered,
}

// Terminal reports whether the phase can never change again.
func (p Phase) Terminal() bool {
	switch p {
	case PhaseSucceeded, PhaseFailed, PhaseAborted, PhaseTimedOut, PhaseRecovered:
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

// progressingPhases maps the reasons of Progressing=True to phases, as
// Flyte's GetPhaseFromConditions does (plus WaitingForResources, which
// only this server writes).
var progressingPhases = map[string]Phase{
	ReasonQueued:              PhaseQueued,
	ReasonWaitingForResources: PhaseWaitingForResources,
	ReasonInitializing:        PhaseInitializing,
	ReasonExecuting:           PhaseRunning,
	ReasonPaused:              PhasePaused,
}

// PhaseOf maps conditions to the public phase this server reads from
// them (PhaseOfAction is the reading of an action: Flyte's actions read
// as Flyte reads them). As Flyte's GetPhaseFromConditions:
// Succeeded=True is SUCCEEDED, or RECOVERED by its reason; Failed=True is
// TIMED_OUT by its reason, FAILED otherwise; Progressing=True gives
// QUEUED, INITIALIZING, RUNNING or PAUSED by its reason, and UNSPECIFIED
// for any other reason (Flyte's RetryableFailure included). Two
// differences: Failed=True with reason Aborted, which this server's abort
// writes on its own actions, is ABORTED (Flyte reads FAILED: it aborts by
// deleting the object), and an action without conditions (new:
// enqueueing is what queues it) is QUEUED (Flyte: UNSPECIFIED).
func PhaseOf(conds []metav1.Condition) Phase {
	if len(conds) == 0 {
		return PhaseQueued
	}
	var progressing *metav1.Condition
	for i := range conds {
		c := &conds[i]
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch c.Type {
		case ConditionSucceeded:
			if c.Reason == ReasonRecovered {
				return PhaseRecovered
			}
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
	return PhaseUnspecified
}

// PhaseOfReason maps a phase-history entry (a condition reason, as Flyte
// writes them) to the public phase, so the API shows history in the same
// names as the phase. A RetryableFailure entry (older servers wrote one
// per retried attempt) is the action going back to the queue, not a
// terminal failure.
func PhaseOfReason(reason string) Phase {
	if p, ok := progressingPhases[reason]; ok {
		return p
	}
	switch reason {
	case ReasonCompleted, ReasonSignaled:
		return PhaseSucceeded
	case ReasonRecovered:
		return PhaseRecovered
	case ReasonTimedOut:
		return PhaseTimedOut
	case ReasonAborted:
		return PhaseAborted
	case ReasonRetryableFailure:
		return PhaseQueued
	case ReasonPermanentFailure, ReasonPluginNotFound, ReasonInvalidSpec:
		return PhaseFailed
	}
	return PhaseUnspecified
}

// PhaseOfAction is the public phase of an action. This server's actions
// read as PhaseOf says. An action Flyte enqueued (EnqueuedByFlyte) reads
// exactly as Flyte's Actions service reads it (FlytePhaseOf), so that both
// show one phase: Failed=True with reason Aborted, which Flyte's executor
// writes when a plugin reports an abort, is FAILED there as in Flyte's
// run service, which shows ABORTED only for an action whose object was
// deleted before it finished (its abort, and this server's abort of
// Flyte's actions, delete them). Two exceptions: without conditions it is
// QUEUED, as any new action here; and an abort that an earlier version
// of this server wrote on it (its reason annotation, Failed=True reason
// Aborted) stays ABORTED, as history recorded it.
func PhaseOfAction(ta *TaskAction) Phase {
	conds := ta.Status.Conditions
	if !EnqueuedByFlyte(ta) || len(conds) == 0 {
		return PhaseOf(conds)
	}
	if _, ours := ta.Annotations[AnnotationAbortReason]; ours && PhaseOf(conds) == PhaseAborted {
		return PhaseAborted
	}
	return FlytePhaseOf(conds)
}

// FlytePhaseOf is Flyte's GetPhaseFromConditions (flyteorg/flyte
// actions/k8s/client.go), ported as it is: the first condition that
// matches decides, in the order they are stored; no match is UNSPECIFIED.
// It never answers ABORTED (Flyte's watcher makes a deleted unfinished
// action ABORTED) nor RECOVERED (Flyte's run service records a recovered
// action directly).
func FlytePhaseOf(conds []metav1.Condition) Phase {
	for _, c := range conds {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch c.Type {
		case ConditionSucceeded:
			return PhaseSucceeded
		case ConditionFailed:
			if c.Reason == ReasonTimedOut {
				return PhaseTimedOut
			}
			return PhaseFailed
		case ConditionProgressing:
			switch c.Reason {
			case ReasonQueued:
				return PhaseQueued
			case ReasonInitializing:
				return PhaseInitializing
			case ReasonExecuting:
				return PhaseRunning
			case ReasonPaused:
				return PhasePaused
			}
		}
	}
	return PhaseUnspecified
}
