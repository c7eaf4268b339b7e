package e2e

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// A second replica runs on the shared server's control plane through the
// kubeconfig it writes, as a server does against any cluster: what one
// replica writes, the other lists and streams. (Its executor is off: the
// embedded control plane serves no Leases to elect one with, and the first
// replica executes.)
func TestSecondReplicaThroughKubeconfig(t *testing.T) {
	replica, err := startServer(t.TempDir(), func(c *app.Config) {
		c.Kubeconfig = filepath.Join(srv.dataDir, "kubeconfig")
		c.ExecutorTaskTypes = ""
	})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Stop()
	run := newRun()
	stream := openStream(t, replica.http, runStreamURL(replica, run), "")
	stream.untilSynced(t)

	enqueue(t, replica, run, "a0", "")
	enqueue(t, srv, run, "c1", "a0")
	putStatus(t, replica, run, "c1", 1, client.RUNNING)
	for _, s := range []*server{srv, replica} {
		eventually(t, 10*time.Second, "both actions on each replica", func() bool {
			resp, err := s.api.ListRunActionsWithResponse(t.Context(), run.Project, run.Domain, run.Name, nil)
			return err == nil && resp.StatusCode() == http.StatusOK && len(resp.JSON200.Items) == 2
		})
	}
	st := state{}
	for st["c1"].Phase != client.RUNNING || st["a0"].ActionId.Name == "" {
		st.apply(t, stream.next(t, 10*time.Second))
	}
}
