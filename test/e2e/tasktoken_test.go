package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"taskactions/pkg/client"
)

// A process task calls the API with the token the server gives it
// (TASKACTIONS_TOKEN): it may act in its own project and domain, and
// nowhere else.
func TestTaskTokenIsScopedToItsProject(t *testing.T) {
	run := newRun()
	script := `api="$TASKACTIONS_URL/api/v1"
code() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TASKACTIONS_TOKEN" "$@"; }
own=$(code "$api/projects/$TASKACTIONS_PROJECT/domains/$TASKACTIONS_DOMAIN/runs")
other=$(code "$api/projects/someone-else/domains/$TASKACTIONS_DOMAIN/runs")
none=$(curl -s -o /dev/null -w '%{http_code}' "$api/projects/$TASKACTIONS_PROJECT/domains/$TASKACTIONS_DOMAIN/runs")
echo "$own $other $none" > result`
	tmpl := map[string]any{"type": "process", "container": map[string]any{"command": []string{"sh", "-c", script}}}
	body, _ := json.Marshal(map[string]any{"action": map[string]any{
		"actionId": map[string]any{"run": map[string]any{"project": run.Project, "domain": run.Domain, "name": run.Name}, "name": "a0"},
		"task":     map[string]any{"taskTemplate": tmpl},
	}})
	resp, err := srv.api.EnqueueActionWithBodyWithResponse(context.Background(), "application/json", strings.NewReader(string(body)))
	if err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue: %v %s", err, resp.Body)
	}
	var a *client.Action
	eventually(t, time.Minute, "the task to finish", func() bool {
		r, err := srv.api.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, "a0")
		a = r.JSON200
		return err == nil && a != nil && (a.Phase == client.SUCCEEDED || a.Phase == client.FAILED)
	})
	if a.Phase != client.SUCCEEDED {
		t.Fatalf("the task ended %s: %+v", a.Phase, a.ErrorState)
	}
	b, err := os.ReadFile(filepath.Join(srv.dataDir, "outputs", run.Project, run.Domain, run.Name, "a0", "result"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "200 403 401" {
		t.Errorf("own project, another, no token: %s, want 200 403 401", got)
	}
}
