package handlers

import (
	"context"
	"fmt"

	"taskactions/internal/auth"
)

// reach is where a task token may use an operation.
type reach int

const (
	nowhere  reach = iota
	anywhere       // what any authenticated subject may ask: who it is, the projects it may read
	inRun          // within the task's own run
	child          // a new child of an action of its own run
	itself         // the task's own action
)

// taskReach is what a task token may do: read its own run (actions,
// events, logs), enqueue children in it, and report its own status.
// Anything else (other runs, deletes, aborts, Stages) is refused, though
// the token's grants are of its project and domain.
var taskReach = map[string]reach{
	"getSession": anywhere, "listProjects": anywhere, "streamProjects": anywhere,
	"getRun": inRun, "listRunActions": inRun, "streamRunEvents": inRun,
	"getAction": inRun, "listChildActions": inRun, "streamActionEvents": inRun,
	"getActionLogs": inRun, "streamActionLogs": inRun,
	"enqueueAction":   child,
	"putActionStatus": itself, "appendActionLogs": itself,
}

// taskAllows refuses what a task token may not do (ErrForbidden).
func taskAllows(t *auth.TaskScope, operationID string, request any) error {
	r := taskReach[operationID]
	if r == anywhere {
		return nil
	}
	project, domain, _ := scopeOf(request)
	run, action, parent := targetOf(request)
	inOwnRun := project == t.Project && domain == t.Domain && run == t.Run
	switch {
	case r == nowhere:
		return fmt.Errorf("%w: %s may not %s: a task's token reads its own run, enqueues children in it and reports its own status", auth.ErrForbidden, t.Name(), operationID)
	case !inOwnRun:
		return fmt.Errorf("%w: %s may %s only in its own run %s/%s/%s", auth.ErrForbidden, t.Name(), operationID, t.Project, t.Domain, t.Run)
	case r == child && parent == "":
		return fmt.Errorf("%w: %s may enqueue only children (with parentActionName) in its run", auth.ErrForbidden, t.Name())
	case r == itself && action != t.Action:
		return fmt.Errorf("%w: %s may %s only of its own action %s", auth.ErrForbidden, t.Name(), operationID, t.Action)
	}
	return nil
}

// targetOf is the run and action a request names, and for an enqueue the
// parent.
func targetOf(request any) (run, action, parent string) {
	switch q := request.(type) {
	case EnqueueActionRequestObject:
		a := q.Body.Action
		return a.ActionId.Run.Name, a.ActionId.Name, value(a.ParentActionName)
	case GetRunRequestObject:
		return q.Run, "", ""
	case ListRunActionsRequestObject:
		return q.Run, "", ""
	case StreamRunEventsRequestObject:
		return q.Run, "", ""
	case GetActionRequestObject:
		return q.Run, q.Action, ""
	case ListChildActionsRequestObject:
		return q.Run, q.Action, ""
	case StreamActionEventsRequestObject:
		return q.Run, q.Action, ""
	case GetActionLogsRequestObject:
		return q.Run, q.Action, ""
	case StreamActionLogsRequestObject:
		return q.Run, q.Action, ""
	case PutActionStatusRequestObject:
		return q.Run, q.Action, ""
	case AppendActionLogsRequestObject:
		return q.Run, q.Action, ""
	}
	return "", "", ""
}

// mayExecute reports whether the request's subject may execute in the
// project and domain, which an enqueue records on the action for its
// task's token. When the authorizer cannot tell, it may not.
func (s *Server) mayExecute(ctx context.Context, project, domain string) bool {
	sub := auth.SubjectFrom(ctx)
	if sub == nil || s.authz == nil {
		return false
	}
	kube := actions(string(auth.VerbExecute))
	return s.authz.Authorize(ctx, sub, auth.Attributes{Verb: auth.VerbExecute, Project: project, Domain: domain, Kube: kube}) == nil
}
