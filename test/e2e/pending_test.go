package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// Where an executor outside may run what this server does not (the
// shared server's --executor-task-types is a list), an action of another
// type answers 201 and says, until its first status, why it waits: in
// REST, in the streams, and to kubectl (an annotation).
func TestUnrunTypeSaysWhyItWaits(t *testing.T) {
	ctx := context.Background()
	run := newRun()
	resp, err := srv.api.EnqueueActionWithResponse(ctx, actionSpec(run, "a0", "", "ehco"))
	if err != nil || resp.JSON201 == nil {
		t.Fatalf("enqueue: %v %s", err, resp.Body)
	}
	want := `no executor of this server runs task type "ehco" (it runs analysis-measurement, echo, http, process, sleep)`
	if p := resp.JSON201.PendingReason; p == nil || !strings.HasPrefix(*p, want) || resp.JSON201.Phase != client.QUEUED {
		t.Fatalf("the new action: %s, pending reason %v, want it to start %q", resp.JSON201.Phase, p, want)
	}
	st := openStream(t, srv.http, runStreamURL(srv, run), "")
	var data client.ActionEvent
	mustJSON(t, []byte(st.untilSynced(t)[0].Data), &data)
	if data.PendingReason == nil || !strings.HasPrefix(*data.PendingReason, want) {
		t.Errorf("the stream's snapshot: pending reason %v", data.PendingReason)
	}
	k := newKubectl(t)
	ns := srv.app.Manager().Namespace(run.Project, run.Domain)
	if out := k.must("", "get", "taskaction", "-n", ns, run.Name+"-a0", "-o", `jsonpath={.metadata.annotations.taskactions\.io/pending-reason}`); !strings.HasPrefix(out, want) {
		t.Errorf("kubectl: %q", out)
	}
	putStatus(t, srv, run, "a0", 1, client.RUNNING)
	g, err := srv.api.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, "a0")
	if err != nil || g.JSON200 == nil || g.JSON200.PendingReason != nil {
		t.Errorf("after the first status: %v %s", err, g.Body)
	}
}

// On the embedded control plane by default ("auto"), no executor outside
// is assumed: an action of a type nothing runs fails at once, as Flyte
// fails one without plugin (PluginNotFound), saying which types run here.
func TestUnrunTypeFailsWithNoExecutorOutside(t *testing.T) {
	s, err := startServer(filepath.Join(t.TempDir(), "data"), func(c *app.Config) { c.ExecutorTaskTypes = "auto" })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx := context.Background()
	run := newRun()
	resp, err := s.api.EnqueueActionWithResponse(ctx, actionSpec(run, "a0", "", "ehco"))
	if err != nil || resp.StatusCode() != http.StatusCreated || resp.JSON201.PendingReason != nil {
		t.Fatalf("enqueue: %v %s", err, resp.Body)
	}
	var a *client.Action
	eventually(t, 20*time.Second, "FAILED", func() bool {
		g, err := s.api.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, "a0")
		a = g.JSON200
		return err == nil && a != nil && a.Phase == client.FAILED
	})
	want := `no executor of this server runs task type "ehco": it runs `
	if a.ErrorState == nil || a.ErrorState.Code != "PluginNotFound" || !strings.HasPrefix(a.ErrorState.Message, want) {
		t.Fatalf("error %+v, want PluginNotFound, %q", a.ErrorState, want)
	}
	// The message names what does run, so the user sees the typo.
	for _, typ := range []string{"echo, ", "git-clone, ", "http, ", "process, ", "sleep, "} {
		if !strings.Contains(a.ErrorState.Message, typ) {
			t.Errorf("message %q does not name %q among the types that run", a.ErrorState.Message, strings.TrimSuffix(typ, ", "))
		}
	}
	if len(a.Conditions) != 2 || a.Conditions[0].Reason != v1.ReasonPluginNotFound {
		t.Errorf("conditions %+v", a.Conditions)
	}
}
