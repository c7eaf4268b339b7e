package handlers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/auth"
)

// authorizer is the strict middleware that applies the operations table
// (operations.go). It runs after the request is parsed and validated, so
// it sees the project and domain wherever the request carries them.
type authorizer struct {
	authz auth.Authorizer
	// executeTypes are task types that run commands on this machine: to
	// enqueue one takes execute besides write.
	executeTypes []string
}

func (a *authorizer) middleware(f StrictHandlerFunc, operationID string) StrictHandlerFunc {
	// The generated code names operations in Go case (AbortAction).
	operationID = strings.ToLower(operationID[:1]) + operationID[1:]
	o, known := operations[operationID]
	return func(ctx context.Context, w http.ResponseWriter, r *http.Request, request any) (any, error) {
		ctx = withOperation(ctx, o)
		switch {
		case !known:
			return nil, fmt.Errorf("operation %s is not in the operations table", operationID)
		case o.public:
			return f(ctx, w, r, request)
		}
		s := auth.SubjectFrom(ctx)
		if s == nil {
			return nil, auth.ErrUnauthenticated
		}
		t, scoped := targetOf(r, o, request)
		if s.Task != nil {
			if err := taskAllows(s.Task, operationID, o.task, t); err != nil {
				return nil, err
			}
		}
		if o.verb != "" {
			if !scoped {
				return nil, fmt.Errorf("operation %s names no project and domain to authorize", operationID)
			}
			for _, v := range append([]auth.Verb{o.verb}, a.extraVerbs(request)...) {
				kube := o.kube
				if v != o.verb { // abort, execute: custom verbs on the same resource
					kube.Verb, kube.Subresource = string(v), ""
				}
				if err := a.authz.Authorize(ctx, s, auth.Attributes{Verb: v, Project: t.project, Domain: t.domain, Kube: kube}); err != nil {
					return nil, err
				}
			}
		}
		return f(ctx, w, r, request)
	}
}

// extraVerbs are what a request needs besides its operation's verb, by
// what it asks for.
func (a *authorizer) extraVerbs(request any) []auth.Verb {
	switch q := request.(type) {
	case EnqueueActionRequestObject:
		if slices.Contains(a.executeTypes, q.Body.Action.Task.TaskTemplate.Type) {
			return []auth.Verb{auth.VerbExecute}
		}
	case DeleteActionRequestObject:
		if value(q.Params.Abort) {
			return []auth.Verb{auth.VerbAbort}
		}
	case DeleteRunRequestObject:
		if value(q.Params.Abort) {
			return []auth.Verb{auth.VerbAbort}
		}
	case CreateAnalysisTemplateRequestObject:
		return jobVerbs(q.JSONBody != nil && hasJobMetric(q.JSONBody.Spec.Metrics))
	case ReplaceAnalysisTemplateRequestObject:
		return jobVerbs(q.JSONBody != nil && hasJobMetric(q.JSONBody.Spec.Metrics))
	case CreateClusterAnalysisTemplateRequestObject:
		return jobVerbs(q.JSONBody != nil && hasJobMetric(q.JSONBody.Spec.Metrics))
	case ReplaceClusterAnalysisTemplateRequestObject:
		return jobVerbs(q.JSONBody != nil && hasJobMetric(q.JSONBody.Spec.Metrics))
	case CreateAnalysisRunRequestObject:
		return jobVerbs(q.JSONBody != nil && hasJobMetric(q.JSONBody.Spec.Metrics))
	}
	return nil
}

// jobVerbs: a metric of Argo Rollouts' job provider runs a command (a
// process action, with --analysis-jobs), so writing one takes execute, as
// enqueueing a process action does. A Stage's verification names
// templates, whose writer was asked.
func jobVerbs(job bool) []auth.Verb {
	if job {
		return []auth.Verb{auth.VerbExecute}
	}
	return nil
}

func hasJobMetric(metrics []rolloutsapi.Metric) bool {
	return slices.ContainsFunc(metrics, func(m rolloutsapi.Metric) bool { return m.Provider.Job != nil })
}
