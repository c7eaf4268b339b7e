package handlers

import (
	"context"
	"fmt"

	"taskactions/internal/auth"
)

// reach is where a task token may use an operation (the operations
// table's task).
type reach int

const (
	nowhere  reach = iota
	anywhere       // what any authenticated subject may ask: who it is, the projects it may read
	inRun          // within the task's own run
	child          // a new child of an action of its own run
	itself         // the task's own action
)

// taskAllows refuses what a task token may not do (ErrForbidden).
func taskAllows(t *auth.TaskScope, operationID string, r reach, tg target) error {
	if r == anywhere {
		return nil
	}
	inOwnRun := tg.project == t.Project && tg.domain == t.Domain && tg.run == t.Run
	switch {
	case r == nowhere:
		return fmt.Errorf("%w: %s may not %s: a task's token reads its own run, enqueues children in it and reports its own status", auth.ErrForbidden, t.Name(), operationID)
	case !inOwnRun:
		return fmt.Errorf("%w: %s may %s only in its own run %s/%s/%s", auth.ErrForbidden, t.Name(), operationID, t.Project, t.Domain, t.Run)
	case r == child && tg.parent == "":
		return fmt.Errorf("%w: %s may enqueue only children (with parentActionName) in its run", auth.ErrForbidden, t.Name())
	case r == itself && tg.action != t.Action:
		return fmt.Errorf("%w: %s may %s only of its own action %s", auth.ErrForbidden, t.Name(), operationID, t.Action)
	}
	return nil
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
