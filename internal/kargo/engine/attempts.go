package engine

import (
	"fmt"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// Kargo's retry model and TaskAction attempts
//
// Kargo re-runs a step on every reconcile while its runner returns Running
// (polling) or a retryable error. retry.errorThreshold (default 1) counts
// consecutive errors: when reached the step is Errored "step %q met error
// threshold of %d: ..."; retry.timeout (default 0 = none) is a soft bound on
// the whole step, checked after each run: past it the step is Errored "step
// %q timed out after %s".
//
// A TaskAction instead has attempts: a failed attempt is retried up to
// `retries` times, and each attempt may have a timeout ending it TIMED_OUT.
// Polling belongs inside the task's plugin (its state persists between
// rounds), so the orchestrator only sees the action's terminal phase:
//
//   - Retries(step) = errorThreshold - 1: the threshold counts runs that
//     errored, so threshold N allows N-1 retries. Unlike Kargo, a Running
//     round between errors does not reset the count.
//   - Timeout(step) = retry.timeout, used as the per-attempt timeout; Kargo's
//     is for the whole step (across retries), so with retries a step may run
//     up to (retries+1)*timeout. 0 = none.
//   - StepStatusOf maps the child action's terminal phase to the step's
//     status and message; see there.

// DefaultErrorThreshold is Kargo's system-wide errorThreshold (steps here have
// no runner-specific defaults).
const DefaultErrorThreshold uint32 = 1

// ErrorThreshold is the step's retry.errorThreshold, DefaultErrorThreshold
// when unset or 0.
func ErrorThreshold(step kargoapi.PromotionStep) uint32 {
	return step.Retry.GetErrorThreshold(DefaultErrorThreshold)
}

// Retries is how many times the step's child action may be retried:
// ErrorThreshold-1 (the default threshold 1 gives 0 retries).
func Retries(step kargoapi.PromotionStep) int {
	return int(ErrorThreshold(step)) - 1
}

// Timeout is the step's retry.timeout, used as the child action's
// per-attempt timeout; 0 (unset, zero or negative) means none.
func Timeout(step kargoapi.PromotionStep) time.Duration {
	d := step.Retry.GetTimeout(nil)
	if d == nil || *d < 0 {
		return 0
	}
	return *d
}

// TaskAction phases StepStatusOf understands (api/v1's Phase values).
const (
	actionSucceeded = "SUCCEEDED"
	actionRecovered = "RECOVERED"
	actionFailed    = "FAILED"
	actionTimedOut  = "TIMED_OUT"
	actionAborted   = "ABORTED"
)

// StepStatusOf is the status and message of the step alias when its child
// action is in actionPhase after attempts attempts (the action's
// status.attempts, from 1), errMessage being the action's error message
// (status.errorState.message), if any:
//
//   - SUCCEEDED, or RECOVERED (outputs reused from an earlier run) ⇒
//     Succeeded, "".
//   - FAILED with an errorThreshold above 1 and attempts ≥ threshold ⇒
//     Errored "step %q met error threshold of %d: <error>" (the retries
//     Kargo's threshold allowed are spent, as in Kargo).
//   - FAILED otherwise ⇒ Failed, message <error> (or "step %q failed").
//     This is a judgement call: Kargo calls a step Failed when it ran and
//     reported failure for non-technical reasons, and Errored when it could
//     not be run properly; a TaskAction that ends FAILED on its first (and,
//     with the default threshold of 1, only) attempt, or that the executor
//     stopped retrying early (a non-retryable error), is read as the task
//     running and failing. Kargo itself would report any runner error with
//     the default threshold as Errored "met error threshold of 1"; here that
//     wording is kept for an explicit threshold that was exhausted.
//   - TIMED_OUT ⇒ Errored "step %q timed out after %s" (retry.timeout; when
//     the step has none the timeout was the executor's: "step %q timed
//     out", plus ": <error>" if there is one).
//   - ABORTED ⇒ Aborted, message <error> (or "step %q was aborted"); Decide
//     then ends the promotion Aborted.
//   - Any other phase is not terminal ⇒ Running, "".
func StepStatusOf(
	actionPhase string,
	attempts uint32,
	step kargoapi.PromotionStep,
	alias string,
	errMessage string,
) (StepStatus, string) {
	switch actionPhase {
	case actionSucceeded, actionRecovered:
		return StepSucceeded, ""
	case actionFailed:
		if threshold := ErrorThreshold(step); threshold > 1 && attempts >= threshold {
			msg := errMessage
			if msg == "" {
				msg = "no details provided"
			}
			return StepErrored, fmt.Sprintf("step %q met error threshold of %d: %s", alias, threshold, msg)
		}
		if errMessage == "" {
			return StepFailed, fmt.Sprintf("step %q failed", alias)
		}
		return StepFailed, errMessage
	case actionTimedOut:
		if t := Timeout(step); t > 0 {
			return StepErrored, fmt.Sprintf("step %q timed out after %s", alias, t)
		}
		msg := fmt.Sprintf("step %q timed out", alias)
		if errMessage != "" {
			msg += ": " + errMessage
		}
		return StepErrored, msg
	case actionAborted:
		if errMessage == "" {
			return StepAborted, fmt.Sprintf("step %q was aborted", alias)
		}
		return StepAborted, errMessage
	default:
		return StepRunning, ""
	}
}
