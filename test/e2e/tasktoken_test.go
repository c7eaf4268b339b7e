package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// taskCodes is a shell function for a task's script: code ARGS... prints
// the HTTP status of a curl with the task's token.
const taskCodes = `api="$TASKACTIONS_URL/api/v1"
p=$TASKACTIONS_PROJECT d=$TASKACTIONS_DOMAIN r=$TASKACTIONS_RUN
code() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TASKACTIONS_TOKEN" "$@"; }
post() { code -X POST -H 'Content-Type: application/json' -d "$2" "$api$1"; }
child() { printf '{"action":{"actionId":{"run":{"project":"%s","domain":"%s","name":"%s"},"name":"%s"},"parentActionName":"%s","task":{"taskTemplate":%s}}}' "$p" "$d" "$1" "$2" "$TASKACTIONS_ACTION" "$3"; }
`

func outputFile(t *testing.T, s *server, run client.RunIdentifier, action, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.dataDir, "outputs", run.Project, run.Domain, run.Name, action, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// A process task's token (TASKACTIONS_TOKEN) reaches its own run only:
// it reads the run and its action, enqueues children in it (a process
// child too: its enqueuer, the admin, may execute), and nothing else: not
// another run, not the project's run list, not an abort, not a root, not
// another project, not /metrics.
func TestTaskTokenReachesOnlyItsRun(t *testing.T) {
	run := newRun()
	script := taskCodes + `own=$(code "$api/projects/$p/domains/$d/runs/$r/actions")
self=$(code "$api/projects/$p/domains/$d/runs/$r/actions/$TASKACTIONS_ACTION")
other=$(code "$api/projects/$p/domains/$d/runs/someone-elses/actions")
runs=$(code "$api/projects/$p/domains/$d/runs")
abort=$(post "/projects/$p/domains/$d/runs/$r/actions/$TASKACTIONS_ACTION/abort" '{}')
echo=$(post /actions "$(child "$r" c-echo '{"type":"echo"}')")
proc=$(post /actions "$(child "$r" c-proc '{"type":"process","container":{"command":["true"]}}')")
root=$(post /actions '{"action":{"actionId":{"run":{"project":"'$p'","domain":"'$d'","name":"elsewhere"},"name":"a0"},"task":{"taskTemplate":{"type":"echo"}}}}')
project=$(code "$api/projects/someone-else/domains/$d/runs/$r/actions")
metrics=$(code "$TASKACTIONS_URL/metrics")
none=$(curl -s -o /dev/null -w '%{http_code}' "$api/projects/$p/domains/$d/runs/$r/actions")
echo "own=$own self=$self other=$other runs=$runs abort=$abort echo=$echo proc=$proc root=$root project=$project metrics=$metrics none=$none" > result`
	enqueueProcess(t, srv, run, "a0", script)
	if a := waitAction(t, srv.api, run, "a0", terminal); a.Phase != client.SUCCEEDED {
		t.Fatalf("the task ended %s: %+v", a.Phase, a.ErrorState)
	}
	want := "own=200 self=200 other=403 runs=403 abort=403 echo=201 proc=201 root=403 project=403 metrics=403 none=401"
	if got := outputFile(t, srv, run, "a0", "result"); got != want {
		t.Errorf("the task's calls:\n got %s\nwant %s", got, want)
	}
	if a := waitAction(t, srv.api, run, "c-proc", terminal); a.Phase != client.SUCCEEDED {
		t.Errorf("the process child the task enqueued ended %s", a.Phase)
	}
}

const readerTokens = `subjects:
  - name: reader
    token: reader-token-0123456789
    grants:
      - {project: tt, domain: dev, verbs: [read]}
`

// A task that prints its environment does not give its token to whoever
// may read its log (the log shows ***), and the token ends with its
// attempt: refused once the action has finished, and once a retry
// superseded the attempt, while the new attempt's token works.
func TestTaskTokenIsNotLoggedAndEndsWithItsAttempt(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tokens, []byte(readerTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := startServer(filepath.Join(dir, "data"), func(c *app.Config) { c.AuthTokensFile = tokens })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	run := client.RunIdentifier{Project: "tt", Domain: "dev", Name: "r1"}
	ctx := context.Background()

	enqueueProcess(t, s, run, "a0", `env; echo "Authorization: Bearer $TASKACTIONS_TOKEN"; printf %s "$TASKACTIONS_TOKEN" > token`)
	if a := waitAction(t, s.api, run, "a0", terminal); a.Phase != client.SUCCEEDED {
		t.Fatalf("the task ended %s: %+v", a.Phase, a.ErrorState)
	}
	token := outputFile(t, s, run, "a0", "token")

	reader, err := client.NewClientWithResponses(s.URL()+"/api/v1", client.WithBearerToken("reader-token-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	logs, err := reader.GetActionLogsWithResponse(ctx, run.Project, run.Domain, run.Name, "a0", nil)
	if err != nil || logs.StatusCode() != http.StatusOK {
		t.Fatalf("the reader reads the log: %v %d", err, logs.StatusCode())
	}
	text := string(logs.Body)
	if strings.Contains(text, token) || strings.Contains(text, token[len(token)-43:]) {
		t.Errorf("the log shows the task's token:\n%s", text)
	}
	if !strings.Contains(text, "TASKACTIONS_TOKEN=***\n") || !strings.Contains(text, "Authorization: Bearer ***\n") {
		t.Errorf("the log does not show the token masked:\n%s", text)
	}

	wantRefused := func(token, action, why string) {
		t.Helper()
		c, err := client.NewClientWithResponses(s.URL()+"/api/v1", client.WithBearerToken(token))
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, action)
		if err != nil || r.StatusCode() != http.StatusUnauthorized || r.ApplicationproblemJSONDefault == nil || !strings.Contains(value(r.ApplicationproblemJSONDefault.Detail), why) {
			t.Errorf("a token of an attempt that is over: %v HTTP %d %s, want 401 saying %q", err, r.StatusCode(), r.Body, why)
		}
	}
	wantRefused(token, "a0", "action tt/dev/r1/a0 is SUCCEEDED")

	// Attempt 1 fails and leaves its token; attempt 2 waits for "go".
	enqueueProcessWith(t, s, run, "a1", `printf %s "$TASKACTIONS_TOKEN" > token-$TASKACTIONS_ATTEMPT
[ "$TASKACTIONS_ATTEMPT" = 1 ] && exit 1
while [ ! -e go ]; do sleep 0.05; done`, func(tmpl *client.TaskTemplate) {
		retries := int32(1)
		tmpl.Metadata = &client.TaskMetadata{Retries: &retries}
	})
	waitAction(t, s.api, run, "a1", func(a *client.Action) bool { return a.Attempts == 2 && a.Phase == client.RUNNING })
	eventually(t, time.Minute, "attempt 2 to write its token", func() bool {
		_, err := os.Stat(filepath.Join(s.dataDir, "outputs", "tt", "dev", "r1", "a1", "token-2"))
		return err == nil
	})
	first, second := outputFile(t, s, run, "a1", "token-1"), outputFile(t, s, run, "a1", "token-2")
	wantRefused(first, "a1", "attempt 1 is over: action tt/dev/r1/a1 is on attempt 2")
	c2, _ := client.NewClientWithResponses(s.URL()+"/api/v1", client.WithBearerToken(second))
	if r, err := c2.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, "a1"); err != nil || r.StatusCode() != http.StatusOK {
		t.Errorf("the current attempt's token: %v HTTP %d %s", err, r.StatusCode(), r.Body)
	}
	if err := os.WriteFile(filepath.Join(s.dataDir, "outputs", "tt", "dev", "r1", "a1", "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if a := waitAction(t, s.api, run, "a1", terminal); a.Phase != client.SUCCEEDED {
		t.Fatalf("a1 ended %s", a.Phase)
	}
	wantRefused(second, "a1", "action tt/dev/r1/a1 is SUCCEEDED")
}

func enqueueProcessWith(t *testing.T, s *server, run client.RunIdentifier, name, script string, edit func(*client.TaskTemplate)) {
	t.Helper()
	req := actionSpec(run, name, "", "process")
	cmd := []string{"sh", "-c", script}
	req.Action.Task.TaskTemplate.Container = &client.Container{Command: &cmd}
	edit(&req.Action.Task.TaskTemplate)
	resp, err := s.api.EnqueueActionWithResponse(context.Background(), req)
	if err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue %s: %v %s", name, err, resp.Body)
	}
}

// A task whose action no subject with execute enqueued (here one made
// with kubectl, as a cluster user with create on taskactions but without
// the execute verb could) gets a token without execute: it may enqueue
// an echo child, but not a process child.
func TestTaskOfNoExecuteCannotEnqueueProcess(t *testing.T) {
	k := newKubectl(t)
	run := newRun()
	script := taskCodes + `echo=$(post /actions "$(child "$r" c-echo '{"type":"echo"}')")
proc=$(post /actions "$(child "$r" c-proc '{"type":"process","container":{"command":["true"]}}')")
echo "echo=$echo proc=$proc" > result`
	tmpl, _ := json.Marshal(map[string]any{"type": "process", "container": map[string]any{"command": []string{"sh", "-c", script}}})
	k.must(fmt.Sprintf(`apiVersion: flyte.org/v1
kind: TaskAction
metadata:
  name: %s-k0
  namespace: %s-%s
spec:
  runName: %s
  project: %s
  domain: %s
  actionName: k0
  taskType: process
  taskTemplate: %s
`, run.Name, run.Project, run.Domain, run.Name, run.Project, run.Domain, base64.StdEncoding.EncodeToString(tmpl)), "apply", "-f", "-")
	if a := waitAction(t, srv.api, run, "k0", terminal); a.Phase != client.SUCCEEDED {
		t.Fatalf("the task ended %s: %+v", a.Phase, a.ErrorState)
	}
	if got := outputFile(t, srv, run, "k0", "result"); got != "echo=201 proc=403" {
		t.Errorf("the task's enqueues: %s, want echo=201 proc=403", got)
	}
}
