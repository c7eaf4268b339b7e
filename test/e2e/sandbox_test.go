package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"taskactions/internal/app"
	"taskactions/pkg/client"
)

const runnerTokens = `subjects:
  - {name: runner, token: runner-token-0123456789, grants: [{project: p1, domain: dev, verbs: [read, write, execute]}]}
`

// sandboxProbe is the escape of issue 34 and its variants, from a task's
// output dir (<data-dir>/outputs/<project>/<domain>/<run>/<action>): each
// probe prints NAME=read or NAME=denied. A task's own dir and its tmp
// dir must be usable.
const sandboxProbe = `top=../../../../..
probe() { if cat "$2" >/dev/null 2>&1; then echo "$1=read"; else echo "$1=denied"; fi; }
probe token $top/api-token
probe key $top/auth-key
probe kubeconfig $top/kubeconfig
probe history $top/history.db
probe absolute "$TASKACTIONS_OUTPUT_DIR/$top/api-token"
probe other ../../../../secret/dev/vault/v0/secret.txt
if ls ../.. >/dev/null 2>&1; then echo list=read; else echo list=denied; fi
echo mine > mine.txt && probe own mine.txt
echo tmp > "$TMPDIR/t" && probe tmp "$TMPDIR/t"
ln -s $top/api-token stolen && probe link stolen
`

// A task of a user granted execute in p1/dev only is confined to its own
// attempt: it cannot read the server's token, key or kubeconfig, its
// history, or another project's outputs, by a relative path, an absolute
// one or a symlink, while its own dir and tmp dir work. Nor can it make
// the server read a file for it: a log file it swapped for a symlink to
// the token is not served.
func TestProcessTaskIsSandboxed(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tokens, []byte(runnerTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := startServer(filepath.Join(dir, "data"), func(c *app.Config) { c.AuthTokensFile = tokens })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx := context.Background()

	vault := client.RunIdentifier{Project: "secret", Domain: "dev", Name: "vault"}
	enqueueProcess(t, s, vault, "v0", `echo s3cret > secret.txt`)
	if a := waitAction(t, s.api, vault, "v0", terminal); a.Phase != client.SUCCEEDED {
		t.Fatalf("the victim's task ended %s: %+v", a.Phase, a.ErrorState)
	}

	runner, err := client.NewClientWithResponses(s.URL()+"/api/v1", client.WithBearerToken("runner-token-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	run := client.RunIdentifier{Project: "p1", Domain: "dev", Name: "escape"}
	req := actionSpec(run, "a0", "", "process")
	cmd := []string{"sh", "-c", sandboxProbe + `rm -f stderr-1.log && ln -s $top/api-token stderr-1.log`}
	req.Action.Task.TaskTemplate.Container = &client.Container{Command: &cmd}
	if resp, err := runner.EnqueueActionWithResponse(ctx, req); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("the runner enqueues: %v %s", err, resp.Body)
	}
	if a := waitAction(t, runner, run, "a0", terminal); a.Phase != client.SUCCEEDED {
		t.Fatalf("the task ended %s: %+v", a.Phase, a.ErrorState)
	}

	stdout := client.LogStreamParam("stdout")
	logs, err := runner.GetActionLogsWithResponse(ctx, run.Project, run.Domain, run.Name, "a0", &client.GetActionLogsParams{Stream: &stdout})
	if err != nil || logs.StatusCode() != http.StatusOK {
		t.Fatalf("read the log: %v %d", err, logs.StatusCode())
	}
	want := "token=denied key=denied kubeconfig=denied history=denied absolute=denied other=denied list=denied own=read tmp=read link=denied"
	if got := strings.Join(strings.Fields(string(logs.Body)), " "); got != want {
		t.Errorf("what the task reached:\n got %s\nwant %s", got, want)
	}

	stderr := client.LogStreamParam("stderr")
	swapped, err := runner.GetActionLogsWithResponse(ctx, run.Project, run.Domain, run.Name, "a0", &client.GetActionLogsParams{Stream: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(swapped.Body), s.token) {
		t.Errorf("the server served the admin token through the task's symlinked log (%d)", swapped.StatusCode())
	}
}
