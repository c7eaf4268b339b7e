package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"taskactions/api"
	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// The grants of the matrix: a token per grant, in project "authz", domain
// "dev" (which grants nothing on Stages: they belong to a project, not a
// domain) or every domain ("preader", "pwriter"); "stranger" has every
// verb, in another project.
const matrixTokens = `
subjects:
  - {name: reader,   token: reader-token-0123456789,   grants: [{project: authz, domain: dev, verbs: [read]}]}
  - {name: writer,   token: writer-token-0123456789,   grants: [{project: authz, domain: dev, verbs: [write]}]}
  - {name: aborter,  token: aborter-token-0123456789,  grants: [{project: authz, domain: dev, verbs: [abort]}]}
  - {name: executor, token: executor-token-0123456789, grants: [{project: authz, domain: dev, verbs: [write, execute]}]}
  - {name: preader,  token: preader-token-0123456789,  grants: [{project: authz, domain: "*", verbs: [read]}]}
  - {name: pwriter,  token: pwriter-token-0123456789,  grants: [{project: authz, domain: "*", verbs: [write]}]}
  - {name: stranger, token: stranger-token-0123456789, grants: [{project: elsewhere, domain: "*", verbs: ["*"]}]}
`

// matrixSubject is one caller of the matrix: its token, its verbs in
// authz/dev, and its verbs on the project authz itself (a grant of every
// domain: what Stage operations need) ("" token: no credential).
type matrixSubject struct {
	name, token  string
	verbs        []string
	projectVerbs []string
}

// matrixOp is one operation of the document as the matrix calls it.
type matrixOp struct {
	// verbs needed in authz/dev (in project authz, for an operation on
	// Stages, Freight or Promotions: stage set); nil: any authenticated
	// caller; public operations are marked so.
	verbs  []string
	public bool
	stage  bool
	// cluster: an operation on a cluster-scoped object, which needs the
	// verbs in every project and domain.
	cluster bool
	ok      int
	// request builds the call for a subject (its own action names, so
	// that each call is new).
	request func(sub string) (method, path, body string)
}

// Every route and every stream, for a token per grant, with none, and
// for a subject with every verb in another project: 200 (or the
// operation's success) when the grants allow it, 403 naming the verb and
// the project and domain when not, 401 without a credential.
//
// It reads better whole: its cases are one table, a line each.
func TestAuthorizationMatrix(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tokens, []byte(matrixTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := startServer(filepath.Join(dir, "data"), func(c *app.Config) { c.AuthTokensFile = tokens })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	all := []string{"read", "write", "abort", "execute"}
	subjects := []matrixSubject{
		{"nobody", "", nil, nil},
		{"admin", s.token, all, all},
		{"reader", "reader-token-0123456789", []string{"read"}, nil},
		{"writer", "writer-token-0123456789", []string{"write"}, nil},
		{"aborter", "aborter-token-0123456789", []string{"abort"}, nil},
		{"executor", "executor-token-0123456789", []string{"write", "execute"}, nil},
		{"preader", "preader-token-0123456789", []string{"read"}, []string{"read"}},
		{"pwriter", "pwriter-token-0123456789", []string{"write"}, []string{"write"}},
		{"stranger", "stranger-token-0123456789", nil, nil},
	}
	// The admin sets the scene: a run, and per subject an action to report
	// on, one to abort, a finished one to delete, and a run to delete.
	run := client.RunIdentifier{Project: "authz", Domain: "dev", Name: "r1"}
	enqueue(t, s, run, "a0", "")
	for _, sub := range subjects {
		enqueue(t, s, run, "s-"+sub.name, "a0")
		enqueue(t, s, run, "x-"+sub.name, "a0")
		enqueue(t, s, run, "d-"+sub.name, "a0")
		putStatus(t, s, run, "d-"+sub.name, 1, client.SUCCEEDED)
		enqueue(t, s, client.RunIdentifier{Project: "authz", Domain: "dev", Name: "del-" + sub.name}, "a0", "")
	}
	// And Stages in project authz: one to read, and per subject one to
	// replace, one to delete and one to refresh (settled, so that the
	// controller does not change them under the matrix).
	S := "/projects/authz/stages"
	createStageAs := func(name string) {
		body := name
		if !strings.HasPrefix(name, "{") {
			body = regularStage(name, "")
		}
		code, problem := matrixCall(t, s, "POST", S, body, s.token)
		if code != http.StatusCreated {
			t.Fatalf("create Stage %s: HTTP %d %s", name, code, problem)
		}
	}
	createStageAs("st")
	// dn takes Freight from st: the Freight F, approved for it, can be
	// promoted downstream of st; PR is a Promotion of F to st.
	createStageAs(`{"metadata":{"name":"dn"},"spec":{"requestedFreight":[{"origin":{"kind":"Warehouse","name":"w"},"sources":{"stages":["st"]}}],` +
		`"promotionTemplate":{"spec":{"steps":[{"uses":"echo"}]}}}}`)
	var F, PR string
	{
		var f, pr struct{ Metadata struct{ Name string } }
		matrixPost(t, s, "/projects/authz/freight", `{"origin":{"kind":"Warehouse","name":"w"},"images":[{"repoURL":"r","tag":"matrix"}]}`, http.StatusCreated, &f)
		F = f.Metadata.Name
		matrixPost(t, s, "/projects/authz/freight/"+F+"/approve?stage=dn", "", http.StatusOK, nil)
		matrixPost(t, s, S+"/st/promotions", fmt.Sprintf(`{"freight":%q}`, F), http.StatusCreated, &pr)
		PR = pr.Metadata.Name
	}
	for _, sub := range subjects {
		for _, prefix := range []string{"rp-", "dl-", "rf-"} {
			createStageAs(prefix + sub.name)
		}
	}
	settledList(t, s, S, 2+3*len(subjects), "the Stages' statuses")
	// Warehouses likewise: one to read, and per subject one to replace,
	// delete and refresh, settled (their discovery fails: no registry).
	W := "/projects/authz/warehouses"
	names := []string{"wh"}
	for _, sub := range subjects {
		names = append(names, "rp-"+sub.name, "dl-"+sub.name, "rf-"+sub.name)
	}
	for _, name := range names {
		matrixPost(t, s, W, fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"subscriptions":[{"image":{"repoURL":"registry.invalid/app"}}]}}`, name), http.StatusCreated, nil)
	}
	settledList(t, s, W, 1+3*len(subjects), "the Warehouses' statuses")
	// The project's one ProjectConfig: each request finds it there (a
	// delete before may have taken it away), as the admin puts it.
	C := "/projects/authz/config"
	haveConfig := func() string {
		var cur map[string]any
		if !matrixGet(t, s, C, &cur) {
			if code, problem := matrixCall(t, s, "PUT", C, "{}", s.token); code != http.StatusCreated {
				t.Fatalf("put the ProjectConfig: HTTP %d %s", code, problem)
			}
			matrixGet(t, s, C, &cur)
		}
		b, _ := json.Marshal(cur)
		return string(b)
	}
	A := "/projects/authz/domains/dev/runs/r1/actions"
	enqueueOf := func(taskType string) func(string) (string, string, string) {
		return func(sub string) (string, string, string) {
			tmpl := fmt.Sprintf(`{"type":%q}`, taskType)
			if taskType == "process" {
				tmpl = `{"type":"process","container":{"command":["true"]}}`
			}
			return "POST", "/actions", fmt.Sprintf(`{"action":{"actionId":{"run":{"project":"authz","domain":"dev","name":"r1"},"name":"e%s-%s"},"parentActionName":"a0","task":{"taskTemplate":%s}}}`, taskType[:1], sub, tmpl)
		}
	}
	get := func(path string) func(string) (string, string, string) {
		return func(string) (string, string, string) { return "GET", path, "" }
	}
	read := []string{"read"}
	ops := map[string]matrixOp{
		"enqueueAction":         {verbs: []string{"write"}, ok: 201, request: enqueueOf("external")},
		"enqueueAction/process": {verbs: []string{"write", "execute"}, ok: 201, request: enqueueOf("process")},
		"putActionStatus": {verbs: []string{"write"}, ok: 200, request: func(sub string) (string, string, string) {
			return "PUT", A + "/s-" + sub + "/status", `{"attempt":1,"status":{"phase":"RUNNING"}}`
		}},
		"abortAction": {verbs: []string{"abort"}, ok: 202, request: func(sub string) (string, string, string) {
			return "POST", A + "/x-" + sub + "/abort", `{"reason":"matrix"}`
		}},
		"deleteAction": {verbs: []string{"write"}, ok: 202, request: func(sub string) (string, string, string) {
			return "DELETE", A + "/d-" + sub, ""
		}},
		"deleteRun": {verbs: []string{"write", "abort"}, ok: 202, request: func(sub string) (string, string, string) {
			return "DELETE", "/projects/authz/domains/dev/runs/del-" + sub + "?abort=true", ""
		}},
		"listRuns":            {verbs: read, ok: 200, request: get("/projects/authz/domains/dev/runs")},
		"getRun":              {verbs: read, ok: 200, request: get("/projects/authz/domains/dev/runs/r1")},
		"listRunActions":      {verbs: read, ok: 200, request: get(A)},
		"getAction":           {verbs: read, ok: 200, request: get(A + "/a0")},
		"listChildActions":    {verbs: read, ok: 200, request: get(A + "/a0/children")},
		"streamActionEvents":  {verbs: read, ok: 200, request: get(A + "/a0/events")},
		"streamRunEvents":     {verbs: read, ok: 200, request: get("/projects/authz/domains/dev/runs/r1/events")},
		"streamRunSummaries":  {verbs: read, ok: 200, request: get("/projects/authz/domains/dev/events")},
		"listStages":          {verbs: read, stage: true, ok: 200, request: get(S)},
		"getStage":            {verbs: read, stage: true, ok: 200, request: get(S + "/st")},
		"streamProjectStages": {verbs: read, stage: true, ok: 200, request: get("/projects/authz/stage-events")},
		"streamStage":         {verbs: read, stage: true, ok: 200, request: get(S + "/st/events")},
		"createStage": {verbs: []string{"write"}, stage: true, ok: 201, request: func(sub string) (string, string, string) {
			return "POST", S, regularStage("cr-"+sub, "")
		}},
		"replaceStage": {verbs: []string{"write"}, stage: true, ok: 200, request: func(sub string) (string, string, string) {
			// From the version of now, as a client would.
			var cur map[string]any
			if !matrixGet(t, s, S+"/rp-"+sub, &cur) {
				t.Fatalf("get Stage rp-%s", sub)
			}
			cur["spec"].(map[string]any)["shard"] = "replaced"
			b, _ := json.Marshal(cur)
			return "PUT", S + "/rp-" + sub, string(b)
		}},
		"deleteStage": {verbs: []string{"write"}, stage: true, ok: 204, request: func(sub string) (string, string, string) {
			return "DELETE", S + "/dl-" + sub, ""
		}},
		"refreshStage": {verbs: []string{"write"}, stage: true, ok: 200, request: func(sub string) (string, string, string) {
			return "POST", S + "/rf-" + sub + "/refresh", ""
		}},
		// st has no Freight yet (its Promotion waits): a subject who may
		// write gets past authorization to Kargo's 409 "stage has no
		// current freight"; test/e2e's contract walks see the 200s.
		"reverifyStage": {verbs: []string{"write"}, stage: true, ok: 409, request: func(string) (string, string, string) {
			return "POST", S + "/st/reverify", ""
		}},
		"abortStageVerification": {verbs: []string{"write"}, stage: true, ok: 409, request: func(string) (string, string, string) {
			return "POST", S + "/st/abort-verification", ""
		}},
		"listWarehouses":          {verbs: read, stage: true, ok: 200, request: get(W)},
		"getWarehouse":            {verbs: read, stage: true, ok: 200, request: get(W + "/wh")},
		"streamProjectWarehouses": {verbs: read, stage: true, ok: 200, request: get("/projects/authz/warehouse-events")},
		"createWarehouse": {verbs: []string{"write"}, stage: true, ok: 201, request: func(sub string) (string, string, string) {
			return "POST", W, fmt.Sprintf(`{"metadata":{"name":"cr-%s"},"spec":{"subscriptions":[{"image":{"repoURL":"registry.invalid/app"}}]}}`, sub)
		}},
		"replaceWarehouse": {verbs: []string{"write"}, stage: true, ok: 200, request: func(sub string) (string, string, string) {
			var cur map[string]any
			if !matrixGet(t, s, W+"/rp-"+sub, &cur) {
				t.Fatalf("get Warehouse rp-%s", sub)
			}
			cur["spec"].(map[string]any)["shard"] = "replaced"
			b, _ := json.Marshal(cur)
			return "PUT", W + "/rp-" + sub, string(b)
		}},
		"deleteWarehouse": {verbs: []string{"write"}, stage: true, ok: 204, request: func(sub string) (string, string, string) {
			return "DELETE", W + "/dl-" + sub, ""
		}},
		"refreshWarehouse": {verbs: []string{"write"}, stage: true, ok: 200, request: func(sub string) (string, string, string) {
			return "POST", W + "/rf-" + sub + "/refresh", ""
		}},
		"getProjectConfig": {verbs: read, stage: true, ok: 200, request: func(string) (string, string, string) {
			haveConfig()
			return "GET", C, ""
		}},
		"putProjectConfig": {verbs: []string{"write"}, stage: true, ok: 200, request: func(string) (string, string, string) {
			return "PUT", C, haveConfig() // a replace, from the version of now
		}},
		"deleteProjectConfig": {verbs: []string{"write"}, stage: true, ok: 204, request: func(string) (string, string, string) {
			haveConfig()
			return "DELETE", C, ""
		}},
		// Freight and Promotions belong to the project too.
		"listFreight":             {verbs: read, stage: true, ok: 200, request: get("/projects/authz/freight")},
		"getFreight":              {verbs: read, stage: true, ok: 200, request: get("/projects/authz/freight/" + F)},
		"listPromotions":          {verbs: read, stage: true, ok: 200, request: get("/projects/authz/promotions")},
		"listStagePromotions":     {verbs: read, stage: true, ok: 200, request: get(S + "/st/promotions")},
		"getPromotion":            {verbs: read, stage: true, ok: 200, request: get("/projects/authz/promotions/" + PR)},
		"streamProjectPromotions": {verbs: read, stage: true, ok: 200, request: get("/projects/authz/promotion-events")},
		"streamStagePromotions":   {verbs: read, stage: true, ok: 200, request: get(S + "/st/promotions/events")},
		"createFreight": {verbs: []string{"write"}, stage: true, ok: 201, request: func(sub string) (string, string, string) {
			return "POST", "/projects/authz/freight", fmt.Sprintf(`{"origin":{"kind":"Warehouse","name":"w"},"images":[{"repoURL":"r","tag":%q}]}`, sub)
		}},
		"approveFreight": {verbs: []string{"write"}, stage: true, ok: 200, request: func(string) (string, string, string) {
			return "POST", "/projects/authz/freight/" + F + "/approve?stage=st", ""
		}},
		"promoteToStage": {verbs: []string{"write"}, stage: true, ok: 201, request: func(string) (string, string, string) {
			return "POST", S + "/st/promotions", fmt.Sprintf(`{"freight":%q}`, F)
		}},
		"promoteDownstream": {verbs: []string{"write"}, stage: true, ok: 201, request: func(string) (string, string, string) {
			return "POST", S + "/st/promotions/downstream", fmt.Sprintf(`{"freight":%q}`, F)
		}},
		"abortPromotion": {verbs: []string{"abort"}, stage: true, ok: 200, request: func(string) (string, string, string) {
			return "POST", "/projects/authz/promotions/" + PR + "/abort", ""
		}},
		"getActionLogs":    {verbs: read, ok: 200, request: get(A + "/a0/logs")},
		"streamActionLogs": {verbs: read, ok: 200, request: get(A + "/a0/logs/events")},
		"appendActionLogs": {verbs: []string{"write"}, ok: 200, request: func(sub string) (string, string, string) {
			return "POST", A + "/s-" + sub + "/logs", `{"attempt":1,"text":"from ` + sub + `\n"}`
		}},
		"listProjects":   {ok: 200, request: get("/projects")},
		"streamProjects": {ok: 200, request: get("/project-events")},
		"getSession":     {ok: 200, request: get("/session")},
		"deleteSession":  {public: true, ok: 204, request: func(string) (string, string, string) { return "DELETE", "/session", "" }},
		"getOpenAPI":     {public: true, ok: 200, request: get("/openapi.yaml")},
		"getOpenAPIJSON": {public: true, ok: 200, request: get("/openapi.json")},
	}
	maps.Copy(ops, analysisMatrix(t, s, subjects))
	// createSession takes the token in its body: covered by the session
	// test; here it only has to exist.
	covered := map[string]bool{"createSession": true}
	for id := range ops {
		covered[strings.Split(id, "/")[0]] = true
	}
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if !covered[op.OperationID] {
				t.Errorf("%s %s (%s) is not in the matrix", method, path, op.OperationID)
			}
		}
	}

	for name, op := range ops {
		for _, sub := range subjects {
			// The refusal names the subject, and where it was refused.
			want, have, names := op.ok, sub.verbs, []string{sub.name, `"authz"`, `"dev"`}
			switch {
			case op.cluster:
				have, names = clusterVerbs(sub), []string{sub.name, "belong to no project"}
			case op.stage:
				have, names = sub.projectVerbs, []string{sub.name, `"authz"`, `domain ""`}
			}
			switch {
			case op.public:
			case sub.token == "":
				want = http.StatusUnauthorized
			case !hasAll(have, op.verbs):
				want = http.StatusForbidden
			}
			method, path, body := op.request(sub.name)
			code, problem := matrixCall(t, s, method, path, body, sub.token)
			if code != want {
				t.Errorf("%s as %s: HTTP %d, want %d (%s)", name, sub.name, code, want, problem)
				continue
			}
			if code == http.StatusForbidden && slices.ContainsFunc(names, func(n string) bool { return !strings.Contains(problem, n) }) {
				t.Errorf("%s as %s: the refusal %q should name %q", name, sub.name, problem, names)
			}
		}
	}
	// Grants are per domain too: the reader of authz/dev reads nothing of
	// authz/prod.
	if code, _ := matrixCall(t, s, "GET", "/projects/authz/domains/prod/runs", "", "reader-token-0123456789"); code != http.StatusForbidden {
		t.Errorf("reader of dev listing prod: HTTP %d, want 403", code)
	}
	if code, _ := matrixCall(t, s, "GET", "/projects/elsewhere/domains/prod/runs", "", "stranger-token-0123456789"); code != http.StatusOK {
		t.Errorf("stranger in its own project: HTTP %d, want 200", code)
	}
	// The projects list shows each subject what it may read, and nothing
	// else: the reader authz/dev, a stranger nothing, the admin also the
	// Promotions' domain and the AnalysisRuns' (the matrix's runs are run).
	for token, want := range map[string]string{"reader-token-0123456789": "authz/dev", "stranger-token-0123456789": "", s.token: "authz/analysis,authz/dev,authz/kargo"} {
		var l struct {
			Items []struct{ Project, Domain string }
		}
		req, _ := http.NewRequest(http.MethodGet, s.URL()+"/api/v1/projects", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /projects: HTTP %d %s", resp.StatusCode, body)
		}
		mustJSON(t, []byte(body), &l)
		var got []string
		for _, it := range l.Items {
			got = append(got, it.Project+"/"+it.Domain)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("GET /projects as %s: %q, want %q", strings.Split(token, "-")[0], got, want)
		}
	}
	// Stages belong to a project: a grant of one domain of it reads none,
	// a grant of every domain reads them, and only in its project.
	for _, c := range []struct {
		token, path string
		want        int
	}{
		{"reader-token-0123456789", S, http.StatusForbidden},
		{"reader-token-0123456789", S + "/st", http.StatusForbidden},
		{"reader-token-0123456789", "/projects/authz/stage-events", http.StatusForbidden},
		{"preader-token-0123456789", S, http.StatusOK},
		{"preader-token-0123456789", S + "/st", http.StatusOK},
		{"preader-token-0123456789", "/projects/authz/stage-events", http.StatusOK},
		{"preader-token-0123456789", "/projects/elsewhere/stages", http.StatusForbidden},
		{"reader-token-0123456789", "/projects/authz/freight", http.StatusForbidden},
		{"reader-token-0123456789", "/projects/authz/promotions", http.StatusForbidden},
		{"preader-token-0123456789", "/projects/authz/freight", http.StatusOK},
		{"preader-token-0123456789", "/projects/authz/promotions", http.StatusOK},
		{"preader-token-0123456789", "/projects/elsewhere/promotions", http.StatusForbidden},
		{"stranger-token-0123456789", "/projects/elsewhere/stages", http.StatusOK},
	} {
		if code, problem := matrixCall(t, s, "GET", c.path, "", c.token); code != c.want {
			t.Errorf("GET %s with %s: HTTP %d, want %d (%s)", c.path, strings.Split(c.token, "-")[0], code, c.want, problem)
		}
	}
}

// matrixPost posts body with the admin token, checks the status and
// decodes the answer into v (nil: not).
func matrixPost(t *testing.T, s *server, path, body string, want int, v any) {
	t.Helper()
	resp, err := s.http.Post(s.URL()+"/api/v1"+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := readAll(t, resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s: HTTP %d, want %d: %s", path, resp.StatusCode, want, b)
	}
	if v != nil {
		mustJSON(t, []byte(b), v)
	}
}

// matrixGet reads a document with the admin token into v.
func matrixGet(t *testing.T, s *server, path string, v any) bool {
	t.Helper()
	resp, err := s.http.Get(s.URL() + "/api/v1" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

func hasAll(have, need []string) bool {
	for _, n := range need {
		found := false
		for _, h := range have {
			found = found || h == n
		}
		if !found {
			return false
		}
	}
	return true
}

// matrixCall makes one call; a stream is closed once its status is known.
// It returns the status and, for an error, the problem's detail.
func matrixCall(t *testing.T, s *server, method, path, body, token string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.URL()+"/api/v1"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 400 {
		return resp.StatusCode, ""
	}
	var p problemDoc
	_ = json.NewDecoder(resp.Body).Decode(&p)
	if resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("%s %s: 401 without WWW-Authenticate", method, path)
	}
	return resp.StatusCode, p.Detail
}

// settledList waits until the list at path has n objects, each with a
// status condition: its controller has handled it, so that it does not
// change under the matrix.
func settledList(t *testing.T, s *server, path string, n int, what string) {
	t.Helper()
	eventually(t, 10*time.Second, what, func() bool {
		var l struct {
			Items []struct {
				Status struct{ Conditions []any }
			}
		}
		if !matrixGet(t, s, path, &l) {
			return false
		}
		for _, it := range l.Items {
			if len(it.Status.Conditions) == 0 {
				return false
			}
		}
		return len(l.Items) == n
	})
}
