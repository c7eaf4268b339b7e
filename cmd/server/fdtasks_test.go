package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// Under a low descriptor limit, more process tasks than fit, each
// followed by a log stream, all finish: those past --max-processes
// (derived: 8 at 600 descriptors, see fdBudget) wait for a slot instead of
// failing with "too many open files", the streams past the bound get 503,
// and the server stays up and ready. It reads better whole: one server
// under one budget, from start to the end of its tasks.
func TestProcessTasksPastTheDescriptorLimit(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := testserver.FreeAddr(t)
	p := startCommand(t, exec.Command("prlimit", "--nofile=256:600", "--", os.Args[0], "--listen", addr, "--data-dir", dataDir))
	waitReady(t, p, addr)
	api, err := client.NewClientWithResponses("http://"+addr+"/api/v1", client.WithBearerToken(adminToken(t, dataDir)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := client.RunIdentifier{Project: "fd", Domain: "dev", Name: "many"}
	const tasks = 150
	// Each task runs until the test enqueues the action "gate" (it asks
	// with its token), so that every task admitted runs at once.
	cmd := []string{"sh", "-c", `echo started
until curl -sf -o /dev/null -H "Authorization: Bearer $TASKACTIONS_TOKEN" "$TASKACTIONS_URL/api/v1/projects/$TASKACTIONS_PROJECT/domains/$TASKACTIONS_DOMAIN/runs/$TASKACTIONS_RUN/actions/gate"; do sleep 0.5; done
echo done`}
	var streams []*client.Stream[client.LogStreamEvent]
	defer func() {
		for _, s := range streams {
			s.Close()
		}
	}()
	refused := 0
	for i := range tasks {
		name := fmt.Sprintf("a%d", i)
		req := client.EnqueueRequest{Action: client.ActionSpec{ActionId: client.ActionIdentifier{Run: run, Name: name},
			Task: client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "process", Container: &client.Container{Command: &cmd}}}}}
		if resp, err := api.EnqueueActionWithResponse(ctx, req); err != nil {
			t.Fatalf("enqueue %s: %v; log:\n%s", name, err, tail(p.log()))
		} else if resp.StatusCode() != http.StatusCreated {
			t.Fatalf("enqueue %s: %s", name, resp.Body)
		}
		s, err := api.StreamActionLogs(ctx, run.Project, run.Domain, run.Name, name, nil)
		if err != nil {
			refused++ // past --max-streams: 503, by design
			continue
		}
		streams = append(streams, s)
	}
	pid := p.cmd.Process.Pid
	time.Sleep(2 * time.Second) // not an assertion: the figure logged
	t.Logf("%d descriptors with %d tasks enqueued and %d log streams open (%d refused)", openFDs(t, pid), tasks, len(streams), refused)
	gate := client.EnqueueRequest{Action: client.ActionSpec{ActionId: client.ActionIdentifier{Run: run, Name: "gate"},
		Task: client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "echo"}}}}
	if resp, err := api.EnqueueActionWithResponse(ctx, gate); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue the gate: %v %s", err, resp.Body)
	}

	deadline := time.Now().Add(3 * time.Minute)
	for i := range tasks {
		name := fmt.Sprintf("a%d", i)
		for {
			resp, err := api.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, name)
			if err != nil || resp.JSON200 == nil {
				t.Fatalf("get %s: %v %v", name, err, resp)
			}
			a := resp.JSON200
			if a.Phase == client.SUCCEEDED {
				if a.Attempts != 1 {
					t.Errorf("%s took %d attempts, want 1", name, a.Attempts)
				}
				break
			}
			if a.Phase == client.FAILED || a.Phase == client.ABORTED || a.Phase == client.TIMEDOUT {
				t.Fatalf("%s ended %s: %+v", name, a.Phase, a.ErrorState)
			}
			select {
			case <-p.done:
				t.Fatalf("the server exited: %v\n%s", p.err, p.log())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s still %s", name, a.Phase)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if readyz(addr) != http.StatusOK {
		t.Error("not ready after the tasks")
	}
}

// tail is the end of a log.
func tail(s string) string { return s[max(0, len(s)-3000):] }
