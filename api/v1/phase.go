package v1

import (
	"slices"

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

// phaseRule is everything this server knows of one phase: the condition
// that is True while an action is in it, the reason it writes for it, and
// the other reasons a phase-history entry of it may carry (Flyte's, or
// older servers').
type phaseRule struct {
	phase     Phase
	condition string // ConditionProgressing, ConditionSucceeded or ConditionFailed
	reason    string // written by SetPhase callers (ReasonOf); "" writes none of its own
	// also: other history reasons that read as this phase (PhaseOfReason).
	also []string
	// fallback: the phase of its condition True with a reason no rule names
	// (Succeeded=True is SUCCEEDED, Failed=True FAILED; Progressing=True with
	// an unknown reason is UNSPECIFIED, as Flyte reads it).
	fallback bool
}

// phaseRules is the one table of phase and reason rules, in the order of
// Flyte's ActionPhase enum (flyteidl2 common/phase.proto). Terminal phases
// are those whose condition is not Progressing. A RetryableFailure entry
// (older servers wrote one per retried attempt) is the action going back
// to the queue, not a terminal failure. WaitingForResources is a reason
// only this server writes (Flyte writes Queued then).
var phaseRules = []phaseRule{
	{phase: PhaseUnspecified, condition: ConditionProgressing},
	{phase: PhaseQueued, condition: ConditionProgressing, reason: ReasonQueued, also: []string{ReasonRetryableFailure}},
	{phase: PhaseWaitingForResources, condition: ConditionProgressing, reason: ReasonWaitingForResources},
	{phase: PhaseInitializing, condition: ConditionProgressing, reason: ReasonInitializing},
	{phase: PhaseRunning, condition: ConditionProgressing, reason: ReasonExecuting},
	{phase: PhaseSucceeded, condition: ConditionSucceeded, reason: ReasonCompleted, also: []string{ReasonSignaled}, fallback: true},
	{phase: PhaseFailed, condition: ConditionFailed, reason: ReasonPermanentFailure, also: []string{ReasonPluginNotFound, ReasonInvalidSpec}, fallback: true},
	{phase: PhaseAborted, condition: ConditionFailed, reason: ReasonAborted},
	{phase: PhaseTimedOut, condition: ConditionFailed, reason: ReasonTimedOut},
	{phase: PhasePaused, condition: ConditionProgressing, reason: ReasonPaused},
	{phase: PhaseRecovered, condition: ConditionSucceeded, reason: ReasonRecovered},
}

// Phases lists every public phase, in the order of Flyte's ActionPhase
// enum.
var Phases = func() []Phase {
	out := make([]Phase, len(phaseRules))
	for i, r := range phaseRules {
		out[i] = r.phase
	}
	return out
}()

func ruleOf(p Phase) (phaseRule, bool) {
	for _, r := range phaseRules {
		if r.phase == p {
			return r, true
		}
	}
	return phaseRule{}, false
}

// Terminal reports whether the phase can never change again.
func (p Phase) Terminal() bool {
	r, ok := ruleOf(p)
	return ok && r.condition != ConditionProgressing
}

// Valid reports whether p is one of Phases.
func (p Phase) Valid() bool {
	_, ok := ruleOf(p)
	return ok
}

// ReasonOf is the condition reason this server writes for a phase
// (Queued for one that has none of its own).
func ReasonOf(p Phase) string {
	if r, ok := ruleOf(p); ok && r.reason != "" {
		return r.reason
	}
	return ReasonQueued
}

// conditionPhase is the phase a True condition of type typ with reason
// says, and false when it says none.
func conditionPhase(typ, reason string) (Phase, bool) {
	fallback, found := PhaseUnspecified, false
	for _, r := range phaseRules {
		if r.condition != typ {
			continue
		}
		if r.reason != "" && r.reason == reason {
			return r.phase, true
		}
		if r.fallback {
			fallback, found = r.phase, true
		}
	}
	return fallback, found
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
// enqueueing is what queues it) is QUEUED (Flyte: UNSPECIFIED). The
// reasons are phaseRules'.
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
		case ConditionSucceeded, ConditionFailed:
			p, _ := conditionPhase(c.Type, c.Reason)
			return p
		case ConditionProgressing:
			progressing = c
		}
	}
	if progressing != nil {
		if p, ok := conditionPhase(ConditionProgressing, progressing.Reason); ok {
			return p
		}
	}
	return PhaseUnspecified
}

// PhaseOfReason maps a phase-history entry (a condition reason, as Flyte
// writes them) to the public phase, so the API shows history in the same
// names as the phase (phaseRules: a rule's reason and its also).
func PhaseOfReason(reason string) Phase {
	for _, r := range phaseRules {
		if r.reason != "" && r.reason == reason || slices.Contains(r.also, reason) {
			return r.phase
		}
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
