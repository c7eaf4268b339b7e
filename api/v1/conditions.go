package v1

// Condition types. Succeeded and Failed are terminal: once True, the action
// never changes phase again.
const (
	ConditionProgressing = "Progressing"
	ConditionSucceeded   = "Succeeded"
	ConditionFailed      = "Failed"
)

// Condition reasons. Progressing carries Queued, Initializing or Executing
// while the action runs; the terminal conditions carry the others.
const (
	ReasonQueued           = "Queued"
	ReasonInitializing     = "Initializing"
	ReasonExecuting        = "Executing"
	ReasonCompleted        = "Completed"
	ReasonRetryableFailure = "RetryableFailure"
	ReasonPermanentFailure = "PermanentFailure"
	ReasonAborted          = "Aborted"
	ReasonTimedOut         = "TimedOut"
	ReasonPluginNotFound   = "PluginNotFound"
	ReasonInvalidSpec      = "InvalidSpec"
	// Condition actions (Flyte's human-in-the-loop): Progressing while
	// waiting for the signal, Succeeded once signalled.
	ReasonPaused   = "Paused"
	ReasonSignaled = "Signaled"
	// ReasonRecovered: Succeeded, with outputs recovered from another run.
	ReasonRecovered = "Recovered"
)

// Error kinds of ErrorState.Kind.
const (
	ErrorKindUser   = "USER"
	ErrorKindSystem = "SYSTEM"
)

// Labels and annotations written on every TaskAction: Flyte's identity
// labels, which Flyte's Actions service writes the same way.
const (
	LabelProject    = "flyte.org/project"
	LabelDomain     = "flyte.org/domain"
	LabelRun        = "flyte.org/run"
	LabelAction     = "flyte.org/action"
	LabelParent     = "flyte.org/parent"
	LabelIsRoot     = "flyte.org/is-root"
	LabelActionType = "flyte.org/action-type"

	// LabelTerminalState is what earlier versions of this server wrote on
	// their own actions once history had the terminal status. This one
	// writes it no more (a restart asks history instead, which saves each
	// action a write); it is left where it is, and not copied to children.
	LabelTerminalState = "taskactions.io/terminal-status-recorded"
	// LabelFlyteTerminalState is Flyte's Actions service's mark of the
	// same thing in its run service: it skips actions that carry it. This
	// server never writes it; earlier versions set it where later ones set
	// LabelTerminalState, and it is left where they did.
	LabelFlyteTerminalState = "flyte.org/terminal-status-recorded"

	AnnotationAbortReason = "flyte.org/abort-reason"
	// AnnotationMayExecute ("true") records that the subject who enqueued
	// the action was allowed execute in its project and domain: only then
	// does its task's token allow enqueueing tasks that run commands. The
	// server sets it at enqueue; a run spec cannot (taskactions.io/ is
	// reserved), and a child does not inherit it.
	AnnotationMayExecute = "taskactions.io/may-execute"
	// AnnotationPendingReason says, on an action this server enqueued,
	// why it waits: no executor of this server runs its task type. The
	// API shows it until the action's first status.
	AnnotationPendingReason = "taskactions.io/pending-reason"

	// Action types of spec.actionType (empty is a task).
	ActionTypeTask      = "task"
	ActionTypeCondition = "condition"

	// FinalizerPlugin keeps an action until its executor plugin has cleaned up.
	FinalizerPlugin = "flyte.org/plugin-finalizer"
)
