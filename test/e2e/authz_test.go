package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"taskactions/api"
	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// The grants of the matrix: a token per grant, all in project "authz",
// domain "dev"; "stranger" has every verb, in another project.
const matrixTokens = `
subjects:
  - {name: reader,   token: reader-token-0123456789,   grants: [{project: authz, domain: dev, verbs: [read]}]}
  - {name: writer,   token: writer-token-0123456789,   grants: [{project: authz, domain: dev, verbs: [write]}]}
  - {name: aborter,  token: aborter-token-0123456789,  grants: [{project: authz, domain: dev, verbs: [abort]}]}
  - {name: executor, token: executor-token-0123456789, grants: [{project: authz, domain: dev, verbs: [write, execute]}]}
  - {name: stranger, token: stranger-token-0123456789, grants: [{project: elsewhere, domain: "*", verbs: ["*"]}]}
`

// matrixSubject is one caller of the matrix: its token and verbs in
// authz/dev ("" token: no credential).
type matrixSubject struct {
	name, token string
	verbs       []string
}

// matrixOp is one operation of the document as the matrix calls it.
type matrixOp struct {
	// verbs needed in authz/dev; nil: any authenticated caller; public
	// operations are marked so.
	verbs  []string
	public bool
	ok     int
	// request builds the call for a subject (its own action names, so
	// that each call is new).
	request func(sub string) (method, path, body string)
}

// Every route and every stream, for a token per grant, with none, and
// for a subject with every verb in another project: 200 (or the
// operation's success) when the grants allow it, 403 naming the verb and
// the project and domain when not, 401 without a credential.
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
	subjects := []matrixSubject{
		{"nobody", "", nil},
		{"admin", s.token, []string{"read", "write", "abort", "execute"}},
		{"reader", "reader-token-0123456789", []string{"read"}},
		{"writer", "writer-token-0123456789", []string{"write"}},
		{"aborter", "aborter-token-0123456789", []string{"abort"}},
		{"executor", "executor-token-0123456789", []string{"write", "execute"}},
		{"stranger", "stranger-token-0123456789", nil},
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
		"listRuns":           {verbs: read, ok: 200, request: get("/projects/authz/domains/dev/runs")},
		"getRun":             {verbs: read, ok: 200, request: get("/projects/authz/domains/dev/runs/r1")},
		"listRunActions":     {verbs: read, ok: 200, request: get(A)},
		"getAction":          {verbs: read, ok: 200, request: get(A + "/a0")},
		"listChildActions":   {verbs: read, ok: 200, request: get(A + "/a0/children")},
		"streamActionEvents": {verbs: read, ok: 200, request: get(A + "/a0/events")},
		"streamRunEvents":    {verbs: read, ok: 200, request: get("/projects/authz/domains/dev/runs/r1/events")},
		"streamRunSummaries": {verbs: read, ok: 200, request: get("/projects/authz/domains/dev/events")},
		"getSession":         {ok: 200, request: get("/session")},
		"deleteSession":      {public: true, ok: 204, request: func(string) (string, string, string) { return "DELETE", "/session", "" }},
		"getOpenAPI":         {public: true, ok: 200, request: get("/openapi.yaml")},
	}
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
			want := op.ok
			switch {
			case op.public:
			case sub.token == "":
				want = http.StatusUnauthorized
			case !hasAll(sub.verbs, op.verbs):
				want = http.StatusForbidden
			}
			method, path, body := op.request(sub.name)
			code, problem := matrixCall(t, s, method, path, body, sub.token)
			if code != want {
				t.Errorf("%s as %s: HTTP %d, want %d (%s)", name, sub.name, code, want, problem)
				continue
			}
			if code == http.StatusForbidden && (!strings.Contains(problem, sub.name) || !strings.Contains(problem, `"authz"`) || !strings.Contains(problem, `"dev"`)) {
				t.Errorf("%s as %s: the refusal %q should name the subject, the project and the domain", name, sub.name, problem)
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
	if method != http.MethodGet {
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
