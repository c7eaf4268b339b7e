package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"

	"taskactions/internal/auth"
)

// operation is everything this server decides per operation of the
// document, in one place: what a caller needs (verb, public), where the
// request names the project and domain that verb is checked in (scope),
// how far a task's token reaches with it (task), and, for a stream, the
// kind its metrics count it as. checkOperations holds the table to the
// document at start, so an operation added to one and not the other, or
// described differently, stops the server from starting.
type operation struct {
	verb   auth.Verb
	public bool
	scope  scope
	task   reach
	stream string
	// kube is the request as Kubernetes RBAC sees it (--auth=kubernetes).
	kube auth.KubeAttributes
}

// scope is where a request names the project (and domain) it acts in.
type scope int

const (
	unscoped  scope = iota // public, or only an authenticated subject
	inDomain               // the path's {project} and {domain}
	inProject              // the path's {project}: Kargo's objects (grants need domain *)
	inBody                 // the enqueue body's run
	// clusterWide: a cluster-scoped object (ClusterAnalysisTemplate), in
	// no project. It is authorized as in every project and domain, which
	// only a grant of project * and domain * allows, as only a
	// ClusterRole bound cluster-wide does in Kubernetes; with
	// --auth=kubernetes the review names no namespace.
	clusterWide
)

// actions, kargoKube and rolloutsKube make the kube side of an operation.
func actions(verb string) auth.KubeAttributes {
	return auth.KubeAttributes{Group: "flyte.org", Resource: "taskactions", Verb: verb}
}
func kargoKube(resource, verb string) auth.KubeAttributes {
	return auth.KubeAttributes{Group: "kargo.akuity.io", Resource: resource, Verb: verb}
}

func rolloutsKube(resource, verb string) auth.KubeAttributes {
	return auth.KubeAttributes{Group: "argoproj.io", Resource: resource, Verb: verb}
}

var actionStatus = auth.KubeAttributes{Group: "flyte.org", Resource: "taskactions", Subresource: "status", Verb: "update"}

// Verbs, shortened for the table.
const (
	read, write, abort = auth.VerbRead, auth.VerbWrite, auth.VerbAbort
)

// operations holds every operation of the document. A task's token
// reaches its own run (actions, events, logs), new children in it, and
// its own status; anything else (other runs, deletes, aborts, Stages)
// is refused, though the token's grants are of its project and domain.
var operations = map[string]operation{
	"enqueueAction":      {verb: write, scope: inBody, task: child, kube: actions("create")}, // and execute, for a task type that runs commands
	"deleteAction":       {verb: write, scope: inDomain, kube: actions("delete")},            // and abort, with abort=true
	"deleteRun":          {verb: write, scope: inDomain, kube: actions("delete")},            // and abort, with abort=true
	"putActionStatus":    {verb: write, scope: inDomain, task: itself, kube: actionStatus},   //
	"appendActionLogs":   {verb: write, scope: inDomain, task: itself, kube: actionStatus},   //
	"abortAction":        {verb: abort, scope: inDomain, kube: actions("abort")},             //
	"listRuns":           {verb: read, scope: inDomain, kube: actions("list")},               //
	"getRun":             {verb: read, scope: inDomain, task: inRun, kube: actions("get")},   //
	"listRunActions":     {verb: read, scope: inDomain, task: inRun, kube: actions("list")},  //
	"getAction":          {verb: read, scope: inDomain, task: inRun, kube: actions("get")},   //
	"listChildActions":   {verb: read, scope: inDomain, task: inRun, kube: actions("list")},  //
	"getActionLogs":      {verb: read, scope: inDomain, task: inRun, kube: actions("get")},   //
	"streamActionEvents": {verb: read, scope: inDomain, task: inRun, stream: "action", kube: actions("watch")},
	"streamRunEvents":    {verb: read, scope: inDomain, task: inRun, stream: "run", kube: actions("watch")},
	"streamActionLogs":   {verb: read, scope: inDomain, task: inRun, stream: "logs", kube: actions("watch")},
	"streamRunSummaries": {verb: read, scope: inDomain, stream: "runs", kube: actions("watch")},

	"listStages":             {verb: read, scope: inProject, kube: kargoKube("stages", "list")},
	"getStage":               {verb: read, scope: inProject, kube: kargoKube("stages", "get")},
	"streamProjectStages":    {verb: read, scope: inProject, stream: "stages", kube: kargoKube("stages", "watch")},
	"streamStage":            {verb: read, scope: inProject, stream: "stages", kube: kargoKube("stages", "watch")},
	"createStage":            {verb: write, scope: inProject, kube: kargoKube("stages", "create")},
	"replaceStage":           {verb: write, scope: inProject, kube: kargoKube("stages", "update")},
	"deleteStage":            {verb: write, scope: inProject, kube: kargoKube("stages", "delete")},
	"refreshStage":           {verb: write, scope: inProject, kube: kargoKube("stages", "patch")},
	"reverifyStage":          {verb: write, scope: inProject, kube: kargoKube("stages", "patch")},
	"abortStageVerification": {verb: write, scope: inProject, kube: kargoKube("stages", "patch")},

	"listWarehouses":          {verb: read, scope: inProject, kube: kargoKube("warehouses", "list")},
	"getWarehouse":            {verb: read, scope: inProject, kube: kargoKube("warehouses", "get")},
	"streamProjectWarehouses": {verb: read, scope: inProject, stream: "warehouses", kube: kargoKube("warehouses", "watch")},
	"createWarehouse":         {verb: write, scope: inProject, kube: kargoKube("warehouses", "create")},
	"replaceWarehouse":        {verb: write, scope: inProject, kube: kargoKube("warehouses", "update")},
	"deleteWarehouse":         {verb: write, scope: inProject, kube: kargoKube("warehouses", "delete")},
	"refreshWarehouse":        {verb: write, scope: inProject, kube: kargoKube("warehouses", "patch")},

	// A project's one ProjectConfig: a put, which creates it or replaces
	// it, is checked as Kubernetes' update either way.
	"getProjectConfig":    {verb: read, scope: inProject, kube: kargoKube("projectconfigs", "get")},
	"putProjectConfig":    {verb: write, scope: inProject, kube: kargoKube("projectconfigs", "update")},
	"deleteProjectConfig": {verb: write, scope: inProject, kube: kargoKube("projectconfigs", "delete")},

	// Argo Rollouts' analysis kinds.
	"listAnalysisTemplates":          {verb: read, scope: inProject, kube: rolloutsKube("analysistemplates", "list")},
	"getAnalysisTemplate":            {verb: read, scope: inProject, kube: rolloutsKube("analysistemplates", "get")},
	"createAnalysisTemplate":         {verb: write, scope: inProject, kube: rolloutsKube("analysistemplates", "create")},
	"replaceAnalysisTemplate":        {verb: write, scope: inProject, kube: rolloutsKube("analysistemplates", "update")},
	"deleteAnalysisTemplate":         {verb: write, scope: inProject, kube: rolloutsKube("analysistemplates", "delete")},
	"listClusterAnalysisTemplates":   {verb: read, scope: clusterWide, kube: rolloutsKube("clusteranalysistemplates", "list")},
	"getClusterAnalysisTemplate":     {verb: read, scope: clusterWide, kube: rolloutsKube("clusteranalysistemplates", "get")},
	"createClusterAnalysisTemplate":  {verb: write, scope: clusterWide, kube: rolloutsKube("clusteranalysistemplates", "create")},
	"replaceClusterAnalysisTemplate": {verb: write, scope: clusterWide, kube: rolloutsKube("clusteranalysistemplates", "update")},
	"deleteClusterAnalysisTemplate":  {verb: write, scope: clusterWide, kube: rolloutsKube("clusteranalysistemplates", "delete")},
	"listAnalysisRuns":               {verb: read, scope: inProject, kube: rolloutsKube("analysisruns", "list")},
	"getAnalysisRun":                 {verb: read, scope: inProject, kube: rolloutsKube("analysisruns", "get")},
	"createAnalysisRun":              {verb: write, scope: inProject, kube: rolloutsKube("analysisruns", "create")},
	"deleteAnalysisRun":              {verb: write, scope: inProject, kube: rolloutsKube("analysisruns", "delete")},
	"streamProjectAnalysisRuns":      {verb: read, scope: inProject, stream: "analysisruns", kube: rolloutsKube("analysisruns", "watch")},

	"listFreight":             {verb: read, scope: inProject, kube: kargoKube("freights", "list")},
	"getFreight":              {verb: read, scope: inProject, kube: kargoKube("freights", "get")},
	"createFreight":           {verb: write, scope: inProject, kube: kargoKube("freights", "create")},
	"approveFreight":          {verb: write, scope: inProject, kube: kargoKube("stages", "promote")},
	"listPromotions":          {verb: read, scope: inProject, kube: kargoKube("promotions", "list")},
	"listStagePromotions":     {verb: read, scope: inProject, kube: kargoKube("promotions", "list")},
	"getPromotion":            {verb: read, scope: inProject, kube: kargoKube("promotions", "get")},
	"streamProjectPromotions": {verb: read, scope: inProject, stream: "promotions", kube: kargoKube("promotions", "watch")},
	"streamStagePromotions":   {verb: read, scope: inProject, stream: "promotions", kube: kargoKube("promotions", "watch")},
	"promoteToStage":          {verb: write, scope: inProject, kube: kargoKube("stages", "promote")},
	"promoteDownstream":       {verb: write, scope: inProject, kube: kargoKube("stages", "promote")},
	"abortPromotion":          {verb: abort, scope: inProject, kube: kargoKube("promotions", "abort")},

	// Every subject may ask; the answer lists only the projects and
	// domains it may read (filtered by the handler).
	"listProjects":   {task: anywhere},
	"streamProjects": {task: anywhere, stream: "projects"},
	"getSession":     {task: anywhere},
	"createSession":  {public: true},
	"deleteSession":  {public: true},
	"getOpenAPI":     {public: true},
	"getOpenAPIJSON": {public: true},
}

// checkOperations verifies that the table and the document agree on
// every operation: each has an entry, is public in both or neither, has
// a Kubernetes verb where it needs a verb, names its scope and a task's
// target where the table says it does, and is a stream (tagged streams)
// exactly where the table gives a stream kind.
func checkOperations(doc *openapi3.T) error {
	seen := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			o, ok := operations[op.OperationID]
			if !ok {
				return fmt.Errorf("%s %s (%s) has no entry in the operations table", method, path, op.OperationID)
			}
			seen[op.OperationID] = true
			if err := o.check(path, op); err != nil {
				return fmt.Errorf("%s %s (%s): %w", method, path, op.OperationID, err)
			}
		}
	}
	for id := range operations {
		if !seen[id] {
			return fmt.Errorf("the operations table has %s, which the document does not", id)
		}
	}
	return nil
}

func (o operation) check(path string, op *openapi3.Operation) error {
	has := func(param string) bool { return strings.Contains(path, "{"+param+"}") }
	switch {
	case o.public != public(op):
		return fmt.Errorf("the document and the table disagree on whether it is public")
	case o.verb != "" && (o.kube.Verb == "" || o.kube.Resource == ""):
		return fmt.Errorf("no Kubernetes verb and resource for --auth=kubernetes")
	case (o.verb != "") != (o.scope != unscoped):
		return fmt.Errorf("a verb needs a scope to check it in, and only a verb does")
	case o.scope == inDomain && !(has("project") && has("domain")):
		return fmt.Errorf("scoped to a domain, but the path names no {project} and {domain}")
	case o.scope == inProject && !(has("project") && !has("domain")):
		return fmt.Errorf("scoped to a project, but the path does not name {project} alone")
	case o.scope == clusterWide && (has("project") || has("domain")):
		return fmt.Errorf("cluster-wide, but the path names a {project} or {domain}")
	case o.scope == inBody && op.RequestBody == nil:
		return fmt.Errorf("scoped by its body, but it has none")
	case (o.task == inRun || o.task == itself) && !has("run"):
		return fmt.Errorf("a task may use it in its own run, but the path names no {run}")
	case o.task == itself && !has("action"):
		return fmt.Errorf("a task may use it on its own action, but the path names no {action}")
	case (o.stream != "") != slices.Contains(op.Tags, "streams"):
		return fmt.Errorf("the document and the table disagree on whether it is a stream")
	}
	return nil
}

// streamKinds are the kinds of stream the metrics count, each once.
func streamKinds() []string {
	var kinds []string
	for _, o := range operations {
		if o.stream != "" && !slices.Contains(kinds, o.stream) {
			kinds = append(kinds, o.stream)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// target is what a request names: the project and domain it acts in, and
// the run and action (and for an enqueue, the parent) it is about.
type target struct {
	project, domain, run, action, parent string
}

// targetOf reads the target from the path, as the operation's scope says,
// or from the enqueue's body.
func targetOf(r *http.Request, o operation, request any) (target, bool) {
	if o.scope == inBody {
		q, ok := request.(EnqueueActionRequestObject)
		if !ok || q.Body == nil {
			return target{}, false
		}
		a := q.Body.Action
		return target{project: a.ActionId.Run.Project, domain: a.ActionId.Run.Domain, run: a.ActionId.Run.Name, action: a.ActionId.Name, parent: value(a.ParentActionName)}, true
	}
	if o.scope == clusterWide {
		return target{project: auth.Any, domain: auth.Any}, true
	}
	t := target{project: pathParam(r, "project"), run: pathParam(r, "run"), action: pathParam(r, "action")}
	if o.scope == inDomain {
		t.domain = pathParam(r, "domain")
	}
	return t, o.scope != unscoped && t.project != ""
}

// pathParam is a path parameter as the generated code binds it:
// unescaped where the request's path was escaped.
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if r.URL.RawPath != "" {
		if u, err := url.PathUnescape(v); err == nil {
			return u
		}
	}
	return v
}

// operationKey carries the request's operation in its context.
type operationKey struct{}

func withOperation(ctx context.Context, o operation) context.Context {
	return context.WithValue(ctx, operationKey{}, o)
}

// operationFrom is the operation of the request whose context ctx is.
func operationFrom(ctx context.Context) operation {
	o, _ := ctx.Value(operationKey{}).(operation)
	return o
}
