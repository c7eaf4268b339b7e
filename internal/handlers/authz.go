package handlers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"taskactions/internal/auth"
)

// rule is what an operation needs: a verb in the project and domain the
// request names (in its path, or in its body for an enqueue), or only an
// authenticated subject (no verb), or nothing (public).
type rule struct {
	verb   auth.Verb
	public bool
	// kube is the request as Kubernetes RBAC sees it (--auth=kubernetes).
	kube auth.KubeAttributes
}

// actions and kargoKube make the kube side of a rule.
func actions(verb string) auth.KubeAttributes {
	return auth.KubeAttributes{Group: "flyte.org", Resource: "taskactions", Verb: verb}
}
func kargoKube(resource, verb string) auth.KubeAttributes {
	return auth.KubeAttributes{Group: "kargo.akuity.io", Resource: resource, Verb: verb}
}

// rules holds every operation of the document; NewRouter refuses to start
// when one is missing, so a new route cannot go out unguarded.
var rules = map[string]rule{
	"enqueueAction":      {verb: auth.VerbWrite, kube: actions("create")}, // and execute, for a task type that runs commands
	"deleteAction":       {verb: auth.VerbWrite, kube: actions("delete")}, // and abort, with abort=true
	"deleteRun":          {verb: auth.VerbWrite, kube: actions("delete")}, // and abort, with abort=true
	"putActionStatus":    {verb: auth.VerbWrite, kube: auth.KubeAttributes{Group: "flyte.org", Resource: "taskactions", Subresource: "status", Verb: "update"}},
	"abortAction":        {verb: auth.VerbAbort, kube: actions("abort")},
	"listRuns":           {verb: auth.VerbRead, kube: actions("list")},
	"getRun":             {verb: auth.VerbRead, kube: actions("get")},
	"listRunActions":     {verb: auth.VerbRead, kube: actions("list")},
	"getAction":          {verb: auth.VerbRead, kube: actions("get")},
	"listChildActions":   {verb: auth.VerbRead, kube: actions("list")},
	"streamActionEvents": {verb: auth.VerbRead, kube: actions("watch")},
	"streamRunEvents":    {verb: auth.VerbRead, kube: actions("watch")},
	"streamRunSummaries": {verb: auth.VerbRead, kube: actions("watch")},
	// Stages belong to a project, not a domain: their grants need domain *.
	"listStages":          {verb: auth.VerbRead, kube: kargoKube("stages", "list")},
	"getStage":            {verb: auth.VerbRead, kube: kargoKube("stages", "get")},
	"streamProjectStages": {verb: auth.VerbRead, kube: kargoKube("stages", "watch")},
	"streamStage":         {verb: auth.VerbRead, kube: kargoKube("stages", "watch")},
	"createStage":         {verb: auth.VerbWrite, kube: kargoKube("stages", "create")},
	"replaceStage":        {verb: auth.VerbWrite, kube: kargoKube("stages", "update")},
	"deleteStage":         {verb: auth.VerbWrite, kube: kargoKube("stages", "delete")},
	"refreshStage":        {verb: auth.VerbWrite, kube: kargoKube("stages", "patch")},
	// Freight and Promotions, per project too.
	"listFreight":             {verb: auth.VerbRead, kube: kargoKube("freights", "list")},
	"getFreight":              {verb: auth.VerbRead, kube: kargoKube("freights", "get")},
	"listPromotions":          {verb: auth.VerbRead, kube: kargoKube("promotions", "list")},
	"listStagePromotions":     {verb: auth.VerbRead, kube: kargoKube("promotions", "list")},
	"getPromotion":            {verb: auth.VerbRead, kube: kargoKube("promotions", "get")},
	"streamProjectPromotions": {verb: auth.VerbRead, kube: kargoKube("promotions", "watch")},
	"streamStagePromotions":   {verb: auth.VerbRead, kube: kargoKube("promotions", "watch")},
	"createFreight":           {verb: auth.VerbWrite, kube: kargoKube("freights", "create")},
	"approveFreight":          {verb: auth.VerbWrite, kube: kargoKube("stages", "promote")},
	"promoteToStage":          {verb: auth.VerbWrite, kube: kargoKube("stages", "promote")},
	"promoteDownstream":       {verb: auth.VerbWrite, kube: kargoKube("stages", "promote")},
	"abortPromotion":          {verb: auth.VerbAbort, kube: kargoKube("promotions", "abort")},
	"getActionLogs":           {verb: auth.VerbRead, kube: actions("get")},
	"streamActionLogs":        {verb: auth.VerbRead, kube: actions("watch")},
	"appendActionLogs":        {verb: auth.VerbWrite, kube: auth.KubeAttributes{Group: "flyte.org", Resource: "taskactions", Subresource: "status", Verb: "update"}},
	// Every subject may ask; the answer lists only the projects and
	// domains it may read (filtered by the handler).
	"listProjects":   {},
	"streamProjects": {},
	"getSession":     {},
	"createSession":  {public: true},
	"deleteSession":  {public: true},
	"getOpenAPI":     {public: true},
	"getOpenAPIJSON": {public: true},
}

// checkRules verifies that rules and the document agree on every operation.
func checkRules(doc *openapi3.T) error {
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			r, ok := rules[op.OperationID]
			if !ok {
				return fmt.Errorf("%s %s (%s) has no authorization rule", method, path, op.OperationID)
			}
			if r.public != public(op) {
				return fmt.Errorf("%s %s (%s): the document and the rules disagree on whether it is public", method, path, op.OperationID)
			}
			if r.verb != "" && (r.kube.Verb == "" || r.kube.Resource == "") {
				return fmt.Errorf("%s %s (%s) has no Kubernetes verb and resource for --auth=kubernetes", method, path, op.OperationID)
			}
		}
	}
	return nil
}

// authorizer is the strict middleware that applies rules. It runs after the
// request is parsed and validated, so it sees the project and domain
// wherever the request carries them.
type authorizer struct {
	authz auth.Authorizer
	// executeTypes are task types that run commands on this machine: to
	// enqueue one takes execute besides write.
	executeTypes []string
}

func (a *authorizer) middleware(f StrictHandlerFunc, operationID string) StrictHandlerFunc {
	// The generated code names operations in Go case (AbortAction).
	operationID = strings.ToLower(operationID[:1]) + operationID[1:]
	rl, known := rules[operationID]
	return func(ctx context.Context, w http.ResponseWriter, r *http.Request, request any) (any, error) {
		switch {
		case !known:
			return nil, fmt.Errorf("operation %s has no authorization rule", operationID)
		case rl.public:
			return f(ctx, w, r, request)
		}
		s := auth.SubjectFrom(ctx)
		if s == nil {
			return nil, auth.ErrUnauthenticated
		}
		if s.Task != nil {
			if err := taskAllows(s.Task, operationID, request); err != nil {
				return nil, err
			}
		}
		if rl.verb != "" {
			project, domain, ok := scopeOf(request)
			if !ok {
				return nil, fmt.Errorf("operation %s names no project and domain to authorize", operationID)
			}
			for _, v := range append([]auth.Verb{rl.verb}, a.extraVerbs(request)...) {
				kube := rl.kube
				if v != rl.verb { // abort, execute: custom verbs on the same resource
					kube.Verb, kube.Subresource = string(v), ""
				}
				if err := a.authz.Authorize(ctx, s, auth.Attributes{Verb: v, Project: project, Domain: domain, Kube: kube}); err != nil {
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
	}
	return nil
}

// scopeOf is the project and domain a request acts in.
func scopeOf(request any) (project, domain string, ok bool) {
	switch q := request.(type) {
	case EnqueueActionRequestObject:
		run := q.Body.Action.ActionId.Run
		return run.Project, run.Domain, true
	case PutActionStatusRequestObject:
		return q.Project, q.Domain, true
	case AbortActionRequestObject:
		return q.Project, q.Domain, true
	case DeleteActionRequestObject:
		return q.Project, q.Domain, true
	case DeleteRunRequestObject:
		return q.Project, q.Domain, true
	case ListRunsRequestObject:
		return q.Project, q.Domain, true
	case GetRunRequestObject:
		return q.Project, q.Domain, true
	case ListRunActionsRequestObject:
		return q.Project, q.Domain, true
	case GetActionRequestObject:
		return q.Project, q.Domain, true
	case ListChildActionsRequestObject:
		return q.Project, q.Domain, true
	case StreamActionEventsRequestObject:
		return q.Project, q.Domain, true
	case StreamRunEventsRequestObject:
		return q.Project, q.Domain, true
	case StreamRunSummariesRequestObject:
		return q.Project, q.Domain, true
	case GetActionLogsRequestObject:
		return q.Project, q.Domain, true
	case StreamActionLogsRequestObject:
		return q.Project, q.Domain, true
	case AppendActionLogsRequestObject:
		return q.Project, q.Domain, true
	case ListStagesRequestObject:
		return q.Project, "", true
	case GetStageRequestObject:
		return q.Project, "", true
	case StreamProjectStagesRequestObject:
		return q.Project, "", true
	case StreamStageRequestObject:
		return q.Project, "", true
	case CreateStageRequestObject:
		return q.Project, "", true
	case ReplaceStageRequestObject:
		return q.Project, "", true
	case DeleteStageRequestObject:
		return q.Project, "", true
	case RefreshStageRequestObject:
		return q.Project, "", true
	case ListFreightRequestObject:
		return q.Project, "", true
	case GetFreightRequestObject:
		return q.Project, "", true
	case CreateFreightRequestObject:
		return q.Project, "", true
	case ApproveFreightRequestObject:
		return q.Project, "", true
	case ListPromotionsRequestObject:
		return q.Project, "", true
	case ListStagePromotionsRequestObject:
		return q.Project, "", true
	case GetPromotionRequestObject:
		return q.Project, "", true
	case PromoteToStageRequestObject:
		return q.Project, "", true
	case PromoteDownstreamRequestObject:
		return q.Project, "", true
	case AbortPromotionRequestObject:
		return q.Project, "", true
	case StreamProjectPromotionsRequestObject:
		return q.Project, "", true
	case StreamStagePromotionsRequestObject:
		return q.Project, "", true
	}
	return "", "", false
}
