package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// The fan-out example works as docs/api.md says: the parent process
// enqueues 20 sleep children through the API, follows the run's stream
// until they succeed, and then succeeds itself. Its script is outside the
// system's dirs: the server is told it may run it, as the README says.
func TestFanoutExample(t *testing.T) {
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startServer(filepath.Join(t.TempDir(), "data"), func(c *app.Config) { c.ProcessSandboxRead = []string{examples} })
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	run := "fanout-e2e"
	cmd := exec.Command("../../examples/fanout/run.sh", run)
	cmd.Env = append(os.Environ(), "TASKACTIONS_URL="+srv.URL(), "TASKACTIONS_DATA_DIR="+srv.dataDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	ctx := context.Background()
	var parent *client.Action
	eventually(t, 2*time.Minute, "the parent to finish", func() bool {
		resp, err := srv.api.GetActionWithResponse(ctx, "examples", "dev", run, "parent")
		if err != nil || resp.StatusCode() != http.StatusOK {
			return false
		}
		parent = resp.JSON200
		return parent.Phase == client.SUCCEEDED || parent.Phase == client.FAILED || parent.Phase == client.TIMEDOUT
	})
	if parent.Phase != client.SUCCEEDED {
		t.Fatalf("the parent ended %s: %+v", parent.Phase, parent.ErrorState)
	}
	children, err := srv.api.ListChildActionsWithResponse(ctx, "examples", "dev", run, "parent", nil)
	if err != nil || len(children.JSON200.Items) != 20 {
		t.Fatalf("children: %v %s", err, children.Body)
	}
	for _, c := range children.JSON200.Items {
		if c.Phase != client.SUCCEEDED || !strings.HasPrefix(c.ActionId.Name, "child-") {
			t.Errorf("%s is %s", c.ActionId.Name, c.Phase)
		}
	}
}
