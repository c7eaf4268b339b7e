package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TaskActionSpec is what the action is: its identity within a run and the
// task it executes.
type TaskActionSpec struct {
	// RunName is the name of the run this action belongs to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	RunName string `json:"runName"`

	// Project this action belongs to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Project string `json:"project"`

	// Domain this action belongs to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Domain string `json:"domain"`

	// ActionName is unique within the run.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	ActionName string `json:"actionName"`

	// ParentActionName is empty for the root action of a run.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=30
	ParentActionName *string `json:"parentActionName,omitempty"`

	// ActionType is "task" or "condition" (a human-in-the-loop condition,
	// which runs no task); empty means task.
	// +optional
	// +kubebuilder:validation:Enum=task;condition
	ActionType string `json:"actionType,omitempty"`

	// ConditionSpec is the serialized condition of a condition action.
	// +optional
	ConditionSpec []byte `json:"conditionSpec,omitempty"`

	// InputURI is where the action reads its inputs.
	// +optional
	InputURI string `json:"inputUri,omitempty"`

	// RunOutputBase is the prefix under which the action writes its outputs.
	// +optional
	RunOutputBase string `json:"runOutputBase,omitempty"`

	// TaskType selects the executor plugin (echo, process, sleep, ...).
	// Condition actions have none.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	TaskType string `json:"taskType,omitempty"`

	// TaskTemplate holds the task template: JSON when this server wrote it,
	// a serialized protobuf when Flyte did. It is opaque to everyone but
	// the executor that runs the action.
	// +optional
	TaskTemplate []byte `json:"taskTemplate,omitempty"`

	// CacheKey enables cache lookup and write-back when set.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	CacheKey string `json:"cacheKey,omitempty"`

	// ShortName is the display name of the task.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ShortName string `json:"shortName,omitempty"`

	// EnvVars are run-scoped environment variables for the executor.
	// +optional
	EnvVars map[string]string `json:"envVars,omitempty"`

	// Interruptible is the run-scoped interruptibility override.
	// +optional
	Interruptible *bool `json:"interruptible,omitempty"`

	// Group is the group this action belongs to, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Group string `json:"group,omitempty"`
}

// ErrorState is the structured error of the last failed or aborted attempt.
type ErrorState struct {
	// Code is the plugin-defined error code (an exit code, "OOMKilled", ...).
	// +optional
	Code string `json:"code,omitempty"`

	// Kind is "USER", "SYSTEM" or empty.
	// +optional
	Kind string `json:"kind,omitempty"`

	// Message is human-readable.
	// +optional
	Message string `json:"message,omitempty"`
}

// PhaseTransition records entering a phase.
type PhaseTransition struct {
	// Phase is the condition reason entered (Queued, Initializing, Executing,
	// Completed, ...), as the system this is modelled on writes it.
	Phase string `json:"phase"`

	// OccurredAt is when the transition happened.
	OccurredAt metav1.Time `json:"occurredAt"`

	// Message is optional detail about the transition.
	// +optional
	Message string `json:"message,omitempty"`
}

// TaskActionStatus is the observed state: the fields of the seed's
// TaskActionStatus and of Flyte's current one (signals), and the public
// phase this server keeps for kubectl's PHASE column.
type TaskActionStatus struct {
	// Phase is the public phase, as this server's API shows it, written
	// with every status this server writes; a new action reads QUEUED.
	// Another executor (Flyte's) does not write it: its actions show
	// Flyte's own columns.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// StateJSON is the JSON of the status last sent to the run service.
	// +optional
	StateJSON string `json:"stateJson,omitempty"`

	// PluginState is the gob-encoded plugin state of the last round.
	// +optional
	PluginState []byte `json:"pluginState,omitempty"`

	// PluginStateVersion is the schema version of PluginState.
	// +optional
	PluginStateVersion uint8 `json:"pluginStateVersion,omitempty"`

	// PluginPhase is the plugin's own phase, human-readable.
	// +optional
	PluginPhase string `json:"pluginPhase,omitempty"`

	// PluginPhaseVersion is the version of PluginPhase.
	// +optional
	PluginPhaseVersion uint32 `json:"pluginPhaseVersion,omitempty"`

	// Attempts is the latest observed attempt number, starting from 1.
	// +optional
	Attempts uint32 `json:"attempts,omitempty"`

	// SystemFailures counts system-level failures seen while reconciling.
	// +optional
	SystemFailures uint32 `json:"systemFailures,omitempty"`

	// CacheStatus is the latest cache lookup result.
	// +optional
	CacheStatus CatalogCacheStatus `json:"cacheStatus,omitempty"`

	// Conditions: Progressing, Succeeded, Failed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// PhaseHistory is the timeline of phase transitions. It is capped: the
	// first entry and the most recent ones are kept.
	// +optional
	PhaseHistory []PhaseTransition `json:"phaseHistory,omitempty"`

	// ErrorState is the error of the last failed or aborted attempt.
	// +optional
	ErrorState *ErrorState `json:"errorState,omitempty"`

	// SignalValue is the serialized value a condition action was signalled
	// with.
	// +optional
	SignalValue []byte `json:"signalValue,omitempty"`

	// SignalledAt is when it was signalled.
	// +optional
	SignalledAt *metav1.Time `json:"signalledAt,omitempty"`

	// SignalledBy is who signalled it.
	// +optional
	SignalledBy string `json:"signalledBy,omitempty"`
}

// TaskAction is one unit of work of a workflow run.
//
// +genclient
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=taskactions,singular=taskaction,scope=Namespaced
// +kubebuilder:printcolumn:name="Run",type="string",JSONPath=".spec.runName"
// +kubebuilder:printcolumn:name="Action",type="string",JSONPath=".spec.actionName"
// +kubebuilder:printcolumn:name="TaskType",type="string",JSONPath=".spec.taskType"
// +kubebuilder:printcolumn:name="Phase",type="string",JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type=='Progressing')].reason"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Progressing",type="string",JSONPath=".status.conditions[?(@.type=='Progressing')].status",priority=1
// +kubebuilder:printcolumn:name="Succeeded",type="string",JSONPath=".status.conditions[?(@.type=='Succeeded')].status",priority=1
// +kubebuilder:printcolumn:name="Failed",type="string",JSONPath=".status.conditions[?(@.type=='Failed')].status",priority=1
type TaskAction struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TaskActionSpec `json:"spec"`
	// A new action, whose status nobody wrote yet, reads as QUEUED.
	// +kubebuilder:default={phase: QUEUED}
	Status TaskActionStatus `json:"status,omitempty"`
}

// TaskActionList is a list of TaskActions.
//
// +kubebuilder:object:root=true
type TaskActionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TaskAction `json:"items"`
}
