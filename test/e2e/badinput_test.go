package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawStatus sends a request as raw bytes (for what an HTTP client will
// not send) and returns the status code.
func rawStatus(t *testing.T, req string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		t.Fatalf("status line %q", line)
	}
	return fields[1]
}

type problemDoc struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Pointer   string `json:"pointer"`
		Parameter string `json:"parameter"`
		Detail    string `json:"detail"`
	} `json:"errors"`
}

// Every bad request gets the right 4xx as an RFC 9457 problem, never a 5xx,
// and the server stays ready.
//
// It reads better whole: its cases are one table, a line each.
func TestBadInputs(t *testing.T) {
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	actionsURL := "/api/v1/actions"
	a0 := fmt.Sprintf("/api/v1/projects/%s/domains/%s/runs/%s/actions/a0", run.Project, run.Domain, run.Name)
	valid := func(mutate func(m map[string]any)) string {
		body := map[string]any{"action": map[string]any{
			"actionId": map[string]any{"run": map[string]any{"project": "p", "domain": "d", "name": "r"}, "name": "a"},
			"task":     map[string]any{"taskTemplate": map[string]any{"type": "echo"}},
		}}
		if mutate != nil {
			mutate(body)
		}
		b, _ := json.Marshal(body)
		return string(b)
	}
	action := func(m map[string]any) map[string]any { return m["action"].(map[string]any) }
	id := func(m map[string]any) map[string]any { return action(m)["actionId"].(map[string]any) }
	runID := func(m map[string]any) map[string]any { return id(m)["run"].(map[string]any) }
	tmpl := func(m map[string]any) map[string]any {
		return action(m)["task"].(map[string]any)["taskTemplate"].(map[string]any)
	}
	status := func(s string) string { return s }

	tests := []struct {
		name        string
		method, url string
		contentType string
		body        string
		want        int
		pointer     string // an invalid field the problem must name
	}{
		{"malformed JSON", "POST", actionsURL, "application/json", `{"action":`, 400, ""},
		{"empty body", "POST", actionsURL, "application/json", ``, 400, ""},
		{"array instead of object", "POST", actionsURL, "application/json", `[]`, 400, ""},
		{"missing action", "POST", actionsURL, "application/json", `{}`, 400, "/action"},
		{"missing actionId", "POST", actionsURL, "application/json", valid(func(m map[string]any) { delete(action(m), "actionId") }), 400, "/action/actionId"},
		{"missing task", "POST", actionsURL, "application/json", valid(func(m map[string]any) { delete(action(m), "task") }), 400, "/action/task"},
		{"missing task type", "POST", actionsURL, "application/json", valid(func(m map[string]any) { delete(tmpl(m), "type") }), 400, "/action/task/taskTemplate/type"},
		{"uppercase project", "POST", actionsURL, "application/json", valid(func(m map[string]any) { runID(m)["project"] = "Proj" }), 400, "/action/actionId/run/project"},
		{"underscore in domain", "POST", actionsURL, "application/json", valid(func(m map[string]any) { runID(m)["domain"] = "my_dom" }), 400, "/action/actionId/run/domain"},
		{"project of 64 characters", "POST", actionsURL, "application/json", valid(func(m map[string]any) { runID(m)["project"] = strings.Repeat("p", 64) }), 400, "/action/actionId/run/project"},
		{"run name of 31 characters", "POST", actionsURL, "application/json", valid(func(m map[string]any) { runID(m)["name"] = strings.Repeat("r", 31) }), 400, "/action/actionId/run/name"},
		{"slash in action name", "POST", actionsURL, "application/json", valid(func(m map[string]any) { id(m)["name"] = "a/b" }), 400, "/action/actionId/name"},
		{"empty action name", "POST", actionsURL, "application/json", valid(func(m map[string]any) { id(m)["name"] = "" }), 400, "/action/actionId/name"},
		{"number as action name", "POST", actionsURL, "application/json", valid(func(m map[string]any) { id(m)["name"] = 7 }), 400, "/action/actionId/name"},
		{"unknown field", "POST", actionsURL, "application/json", valid(func(m map[string]any) { m["extra"] = true }), 400, ""},
		{"cache key of 257 characters", "POST", actionsURL, "application/json", valid(func(m map[string]any) { action(m)["task"].(map[string]any)["cacheKey"] = strings.Repeat("k", 257) }), 400, "/action/task/cacheKey"},
		{"timeout that is not a duration", "POST", actionsURL, "application/json", valid(func(m map[string]any) { tmpl(m)["metadata"] = map[string]any{"timeout": "5 minutes"} }), 400, "/action/task/taskTemplate/metadata/timeout"},
		{"negative retries", "POST", actionsURL, "application/json", valid(func(m map[string]any) { tmpl(m)["metadata"] = map[string]any{"retries": -1} }), 400, "/action/task/taskTemplate/metadata/retries"},
		{"parent name too long", "POST", actionsURL, "application/json", valid(func(m map[string]any) { action(m)["parentActionName"] = strings.Repeat("x", 31) }), 400, "/action/parentActionName"},
		{"child of a missing parent", "POST", actionsURL, "application/json", valid(func(m map[string]any) { action(m)["parentActionName"] = "nobody" }), 404, ""},
		{"text/plain body", "POST", actionsURL, "text/plain", valid(nil), 415, ""},
		{"body without content type", "POST", actionsURL, "", valid(nil), 415, ""},
		{"body over 1 MiB", "POST", actionsURL, "application/json", valid(func(m map[string]any) { tmpl(m)["custom"] = map[string]any{"blob": strings.Repeat("x", 1<<20)} }), 413, ""},
		{"attempt 0", "PUT", a0 + "/status", "application/json", status(`{"attempt":0,"status":{"phase":"RUNNING"}}`), 400, "/attempt"},
		{"negative attempt", "PUT", a0 + "/status", "application/json", status(`{"attempt":-3,"status":{"phase":"RUNNING"}}`), 400, "/attempt"},
		{"attempt as a string", "PUT", a0 + "/status", "application/json", status(`{"attempt":"1","status":{"phase":"RUNNING"}}`), 400, "/attempt"},
		{"unknown phase", "PUT", a0 + "/status", "application/json", status(`{"attempt":1,"status":{"phase":"DANCING"}}`), 400, "/status/phase"},
		{"phase UNSPECIFIED", "PUT", a0 + "/status", "application/json", status(`{"attempt":1,"status":{"phase":"UNSPECIFIED"}}`), 400, "/status/phase"},
		{"unknown cache status", "PUT", a0 + "/status", "application/json", status(`{"attempt":1,"status":{"phase":"RUNNING","cacheStatus":"WARM"}}`), 400, "/status/cacheStatus"},
		{"unknown error kind", "PUT", a0 + "/status", "application/json", status(`{"attempt":1,"status":{"phase":"FAILED","error":{"kind":"BOTH"}}}`), 400, "/status/error/kind"},
		{"missing status", "PUT", a0 + "/status", "application/json", status(`{"attempt":1}`), 400, "/status"},
		{"status of a missing action", "PUT", strings.Replace(a0, "/a0", "/zz", 1) + "/status", "application/json", status(`{"attempt":1,"status":{"phase":"RUNNING"}}`), 404, ""},
		{"abort reason too long", "POST", a0 + "/abort", "application/json", fmt.Sprintf(`{"reason":%q}`, strings.Repeat("r", 1025)), 400, "/reason"},
		{"uppercase run in the path", "GET", strings.Replace(a0, run.Name, "R1", 1), "", "", 400, ""},
		{"missing action", "GET", strings.Replace(a0, "/a0", "/zz", 1), "", "", 404, ""},
		{"cursor too long", "GET", a0 + "/events?lastEventId=" + strings.Repeat("9", 65), "", "", 400, ""},
		{"unknown API route", "GET", "/api/v1/nope", "", "", 404, ""},
		{"unknown project route", "GET", fmt.Sprintf("/api/v1/projects/%s/things", run.Project), "", "", 404, ""},
		{"DELETE on actions", "DELETE", actionsURL, "", "", 405, ""},
		{"GET on abort", "GET", a0 + "/abort", "", "", 405, ""},
		// Strict parsing.
		{"trailing JSON after the body", "POST", actionsURL, "application/json", valid(nil) + `{}`, 400, ""},
		{"UTF-16 body", "POST", actionsURL, "application/json; charset=utf-16", valid(nil), 415, ""},
		// Without a body an abort needs no Content-Type (TestEveryOperationThroughTheGoClient); with one it does.
		{"abort with a body but no content type", "POST", a0 + "/abort", "", `{"reason":"x"}`, 415, ""},
		{"abort as a form", "POST", a0 + "/abort", "application/x-www-form-urlencoded", "reason=x", 415, ""},
		{"bad escape in the query", "GET", a0 + "/events?lastEventId=%ZZ", "", "", 400, ""},
		{"dot-dot in the path", "GET", "/api/v1/projects/../healthz", "", "", 400, ""},
		{"dot-dot into the dashboard", "GET", "/js/../../etc/passwd", "", "", 400, ""},
		// Reserved keys and environment names.
		{"reserved run spec label", "POST", actionsURL, "application/json", valid(func(m map[string]any) {
			m["runSpec"] = map[string]any{"labels": map[string]any{"flyte.org/terminal-status-recorded": "true"}}
		}), 400, "/runSpec/labels/flyte.org~1terminal-status-recorded"},
		{"reserved annotation", "POST", actionsURL, "application/json", valid(func(m map[string]any) {
			m["runSpec"] = map[string]any{"annotations": map[string]any{"flyte.org/abort-reason": "x"}}
		}), 400, "/runSpec/annotations/flyte.org~1abort-reason"},
		{"= in an env name", "POST", actionsURL, "application/json", valid(func(m map[string]any) {
			m["runSpec"] = map[string]any{"envs": map[string]any{"TASKACTIONS_RUN=x\nA": "1"}}
		}), 400, "/runSpec/envs/TASKACTIONS_RUN=x\nA"},
		{"identity variable in the container env", "POST", actionsURL, "application/json", valid(func(m map[string]any) {
			tmpl(m)["container"] = map[string]any{"env": map[string]any{"TASKACTIONS_TOKEN": "stolen"}}
		}), 400, "/action/task/taskTemplate/container/env/TASKACTIONS_TOKEN"},
		// An action too big to store with its status: 413 before anything
		// is stored (879 KB answered 500 before).
		{"879 KB template", "POST", actionsURL, "application/json", valid(func(m map[string]any) {
			tmpl(m)["custom"] = map[string]any{"blob": strings.Repeat("x", 879_000)}
		}), 413, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL()+tc.url, bytes.NewReader([]byte(tc.body)))
			if err != nil {
				t.Fatal(err)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			resp, err := srv.http.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body := readAll(t, resp.Body)
			if resp.StatusCode != tc.want {
				t.Fatalf("HTTP %d, want %d: %s", resp.StatusCode, tc.want, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("Content-Type %q, want application/problem+json", ct)
			}
			var p problemDoc
			if err := json.Unmarshal([]byte(body), &p); err != nil || p.Status != tc.want || p.Title == "" || p.Type == "" {
				t.Fatalf("not a problem document for %d: %s", tc.want, body)
			}
			if tc.want == 405 && resp.Header.Get("Allow") == "" {
				t.Errorf("405 without an Allow header")
			}
			if tc.pointer != "" && !namesPointer(p, tc.pointer) {
				t.Errorf("problem does not point at %s: %s", tc.pointer, body)
			}
		})
	}
	// Go itself answers a path it cannot parse and headers past
	// MaxHeaderBytes, in text/plain: as far as a problem document goes.
	for name, req := range map[string]string{
		"bad escape in the path": "GET /api/v1/projects/%ZZ/domains/d/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"headers over 64 KiB":    "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + strings.Repeat("a", 70<<10) + "\r\n\r\n",
	} {
		if status := rawStatus(t, req); status != "400" && status != "431" {
			t.Errorf("%s: HTTP %s, want a 4xx", name, status)
		}
	}
	r, err := http.Get(srv.URL() + "/readyz")
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("not ready after the bad inputs: %v %v", err, r.Status)
	}
	r.Body.Close()
}

func namesPointer(p problemDoc, pointer string) bool {
	for _, e := range p.Errors {
		if e.Pointer == pointer || strings.HasPrefix(e.Pointer, pointer+"/") {
			return true
		}
	}
	return false
}
