package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// As make run starts it: no --data-dir, so ./data under the working
// directory. A process task runs there as anywhere (its sandbox opened
// the output dir by a path relative to the task's own directory, and
// every process task exited 126 before it ran).
func TestDefaultDataDirRunsProcessTasks(t *testing.T) {
	dir := t.TempDir()
	addr := testserver.FreeAddr(t)
	cmd := exec.Command(os.Args[0], "--listen", addr)
	cmd.Dir = dir
	p := startCommand(t, cmd)
	waitReady(t, p, addr)

	c, err := client.NewClientWithResponses("http://"+addr+"/api/v1", client.WithBearerToken(adminToken(t, filepath.Join(dir, "data"))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := client.RunIdentifier{Project: "demo", Domain: "dev", Name: "relative"}
	cmdline := []string{"sh", "-c", "echo from the task"}
	req := client.EnqueueRequest{Action: client.ActionSpec{
		ActionId: client.ActionIdentifier{Run: run, Name: "a0"},
		Task:     client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "process", Container: &client.Container{Command: &cmdline}}},
	}}
	if r, err := c.EnqueueActionWithResponse(ctx, req); err != nil || r.JSON201 == nil {
		t.Fatalf("enqueue: %v %s", err, r.Body)
	}
	var a *client.Action
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		g, err := c.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, "a0")
		if err != nil {
			t.Fatal(err)
		}
		if a = g.JSON200; a != nil && (a.Phase == client.SUCCEEDED || a.Phase == client.FAILED) || time.Now().After(deadline) {
			break
		}
	}
	if a == nil || a.Phase != client.SUCCEEDED {
		t.Fatalf("the process task: %+v, want SUCCEEDED; log:\n%s", a, p.log())
	}
	out, err := os.ReadFile(filepath.Join(dir, "data", "outputs", "demo", "dev", "relative", "a0", "stdout-1.log"))
	if err != nil || string(out) != "from the task\n" {
		t.Errorf("its stdout: %q %v", out, err)
	}
}
