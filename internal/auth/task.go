package auth

import (
	"context"
	"strconv"
	"strings"
)

// TaskScope is what a task token is good for: one attempt of one action.
// The server signs it into the token it gives the attempt's process
// (TASKACTIONS_TOKEN); the handlers keep the token within the action's
// own run, and the authenticator refuses it once the attempt is over.
type TaskScope struct {
	Project string `json:"p"`
	Domain  string `json:"d"`
	Run     string `json:"r"`
	Action  string `json:"n"`
	// UID and Attempt name the attempt: an action deleted and made again
	// under the same name, or a later attempt, is not it.
	UID     string `json:"u"`
	Attempt uint32 `json:"a"`
	// MayExecute: the subject that enqueued the action was allowed
	// execute in its project and domain, which the server recorded on the
	// action (taskactions.io/may-execute). Only then may the task enqueue
	// tasks that run commands.
	MayExecute bool `json:"x,omitempty"`
}

// Name is the subject name of the task: task:<project>/<domain>/<run>/<action>#<attempt>.
func (t TaskScope) Name() string {
	return "task:" + strings.Join([]string{t.Project, t.Domain, t.Run, t.Action}, "/") + "#" + strconv.FormatUint(uint64(t.Attempt), 10)
}

// grants are the verbs a task has in its project and domain; the handlers
// narrow them to its run (TaskScope is on the subject). No abort: a task
// that wants its run over reports its own status.
func (t TaskScope) grants() []Grant {
	verbs := []Verb{VerbRead, VerbWrite}
	if t.MayExecute {
		verbs = append(verbs, VerbExecute)
	}
	return []Grant{{Project: t.Project, Domain: t.Domain, Verbs: verbs}}
}

// Attempts tells whether the attempt a task token names is still going
// on. Current returns nil when it is, an error wrapping ErrUnauthenticated
// that says why not (over, superseded, the action gone), or one wrapping
// ErrUnavailable when it cannot tell.
type Attempts interface {
	Current(ctx context.Context, t TaskScope) error
}

// AttemptsFunc is a function that is an Attempts.
type AttemptsFunc func(ctx context.Context, t TaskScope) error

// Current implements Attempts.
func (f AttemptsFunc) Current(ctx context.Context, t TaskScope) error { return f(ctx, t) }
