package taskactions

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/journal"
	"taskactions/internal/runs"
	"taskactions/internal/tracing"
)

// ActionID identifies an action: its run and its name within the run.
type ActionID struct {
	Project, Domain, Run, Name string
}

// RunID returns the identity of the action's run.
func (id ActionID) RunID() v1.RunID {
	return v1.RunID{Project: id.Project, Domain: id.Domain, Run: id.Run}
}

// PhaseTransition is one entry of the public phase history.
type PhaseTransition struct {
	Phase      v1.Phase
	OccurredAt time.Time
	Message    string
}

// Action is the public view of a TaskAction: what the API, the streams and
// the run service show.
type Action struct {
	ID             ActionID
	Parent         string
	ActionType     string // "task" or "condition"
	TaskType       string
	TaskTemplate   *TemplateInfo
	ShortName      string
	Group          string
	InputURI       string
	RunOutputBase  string
	OutputURI      string
	Phase          v1.Phase
	Attempts       uint32
	CacheStatus    v1.CatalogCacheStatus
	SystemFailures uint32
	PluginPhase    string
	PhaseHistory   []PhaseTransition
	Conditions     []metav1.Condition
	ErrorState     *v1.ErrorState
	AbortReason    string
	// PendingReason: why nothing runs the action yet, until its first
	// status (AnnotationPendingReason).
	PendingReason string
	// TraceID is the trace of the action's run (its enqueue's, from
	// tracing.AnnotationTraceparent), in hex; "" when it was not traced.
	TraceID   string `json:",omitempty"`
	CreatedAt time.Time
	UpdatedAt time.Time

	UID             string
	ResourceVersion string
}

// TemplateInfo describes a task template without showing it: only the
// executor of an action reads it, and Flyte's is a serialized protobuf.
type TemplateInfo struct {
	Encoding string // "json" or "binary"
	Size     int
}

// ActionUpdate is one change of one action, as delivered to subscribers.
// One value is shared by every subscriber: treat it as read-only.
type ActionUpdate struct {
	Action
	Deleted bool
	// JSON memoizes the encoding of the API view (lists, snapshots) and
	// Wire that of the stream event, so each is done once.
	JSON journal.Encoded
	Wire journal.Encoded
}

// ViewOf builds the public view of ta.
func ViewOf(ta *v1.TaskAction) Action {
	s := &ta.Spec
	a := Action{
		ID:              ActionID{s.Project, s.Domain, s.RunName, s.ActionName},
		ActionType:      s.ActionType,
		TaskType:        s.TaskType,
		ShortName:       s.ShortName,
		Group:           s.Group,
		InputURI:        s.InputURI,
		RunOutputBase:   s.RunOutputBase,
		OutputURI:       OutputURI(s),
		Phase:           v1.PhaseOfAction(ta),
		Attempts:        ta.Status.Attempts,
		CacheStatus:     ta.Status.CacheStatus,
		SystemFailures:  ta.Status.SystemFailures,
		PluginPhase:     ta.Status.PluginPhase,
		Conditions:      ta.Status.Conditions,
		ErrorState:      ta.Status.ErrorState,
		CreatedAt:       ta.CreationTimestamp.Time,
		UpdatedAt:       ta.CreationTimestamp.Time,
		UID:             string(ta.UID),
		ResourceVersion: ta.ResourceVersion,
	}
	if s.ParentActionName != nil {
		a.Parent = *s.ParentActionName
	}
	if a.ActionType == "" {
		a.ActionType = v1.ActionTypeTask
	}
	if n := len(s.TaskTemplate); n > 0 {
		a.TaskTemplate = &TemplateInfo{Encoding: "binary", Size: n}
		if json.Valid(s.TaskTemplate) {
			a.TaskTemplate.Encoding = "json"
		}
	}
	if a.Phase == v1.PhaseAborted {
		a.AbortReason = v1.AbortReasonOf(ta)
	}
	if len(ta.Status.Conditions) == 0 {
		a.PendingReason = ta.Annotations[v1.AnnotationPendingReason]
	}
	a.TraceID = tracing.TraceID(ta.Annotations)
	a.PhaseHistory = make([]PhaseTransition, len(ta.Status.PhaseHistory))
	for i, h := range ta.Status.PhaseHistory {
		a.PhaseHistory[i] = PhaseTransition{Phase: v1.PhaseOfReason(h.Phase), OccurredAt: h.OccurredAt.Time, Message: h.Message}
		a.UpdatedAt = later(a.UpdatedAt, h.OccurredAt.Time)
	}
	for _, c := range ta.Status.Conditions {
		a.UpdatedAt = later(a.UpdatedAt, c.LastTransitionTime.Time)
	}
	return a
}

// sameView reports whether two updates of an object show clients the same
// thing: the same incarnation, both deleted or not, and the same view but
// for the resource version.
func (u *ActionUpdate) sameView(o *ActionUpdate) bool {
	if u.UID != o.UID || u.Deleted != o.Deleted {
		return false
	}
	a, b := u.Action, o.Action
	a.ResourceVersion, b.ResourceVersion = "", ""
	return reflect.DeepEqual(a, b)
}

// updateOf is the update for an informer event. A deleted action that had
// not finished ends ABORTED, at its deletion, which ends its phase
// history; a finished one keeps its phase, so a late deletion never turns
// a success into an abort.
func updateOf(ta *v1.TaskAction, deleted bool) *ActionUpdate {
	u := &ActionUpdate{Action: ViewOf(ta), Deleted: deleted}
	if deleted && !u.Phase.Terminal() {
		// As Flyte's Actions service reads a deletion; an abort is one.
		// Its reason, when an abort through this server deleted it, is on
		// the object.
		at := time.Now()
		if ta.DeletionTimestamp != nil {
			at = ta.DeletionTimestamp.Time
		}
		u.Phase = v1.PhaseAborted
		u.AbortReason = v1.AbortReasonOf(ta)
		u.PendingReason = ""
		u.PhaseHistory = append(u.PhaseHistory, PhaseTransition{Phase: v1.PhaseAborted, OccurredAt: at, Message: u.AbortReason})
		u.UpdatedAt = later(u.UpdatedAt, at)
	}
	return u
}

// Record is what the run service records of an update: with the action's
// view, which history serves once the object is retired.
func (u *ActionUpdate) Record() runs.Action {
	view, _ := json.Marshal(&u.Action)
	return runs.Action{
		Project: u.ID.Project, Domain: u.ID.Domain, Run: u.ID.Run, Name: u.ID.Name,
		Parent: u.Parent, UID: u.UID, Phase: u.Phase,
		CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt, View: view, Deleted: u.Deleted,
	}
}

// OutputURI is where an action's outputs go: <runOutputBase>/<action>.
func OutputURI(s *v1.TaskActionSpec) string {
	if s.RunOutputBase == "" {
		return ""
	}
	return strings.TrimRight(s.RunOutputBase, "/") + "/" + s.ActionName
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
