package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// apiClient is the generated client with the data dir's admin token, as a
// user holds it.
func apiClient(t *testing.T, addr, dataDir string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses("http://"+addr+"/api/v1", client.WithBearerToken(adminToken(t, dataDir)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// enqueueScript enqueues a process action running script with sh -c.
func enqueueScript(t *testing.T, c *client.ClientWithResponses, run client.RunIdentifier, name, script string) {
	t.Helper()
	cmd := []string{"sh", "-c", script}
	req := client.EnqueueRequest{Action: client.ActionSpec{
		ActionId: client.ActionIdentifier{Run: run, Name: name},
		Task:     client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "process", Container: &client.Container{Command: &cmd}}},
	}}
	resp, err := c.EnqueueActionWithResponse(context.Background(), req)
	if err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue %s/%s: %v %v %s", run.Name, name, err, resp.StatusCode(), resp.Body)
	}
}

// waitEnded waits until the action is terminal and returns it.
func waitEnded(t *testing.T, c *client.ClientWithResponses, run client.RunIdentifier, name string) *client.Action {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := c.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, name)
		if err == nil && resp.JSON200 != nil {
			switch resp.JSON200.Phase {
			case client.SUCCEEDED, client.FAILED, client.ABORTED, client.TIMEDOUT:
				return resp.JSON200
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s did not end: %v %v", run.Name, name, err, resp)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A kill loop aimed at the window between a command's exit and the record
// of its result: each round enqueues commands that exit at once and
// SIGKILLs the server the moment one of them has run. A command that ran
// to its end is never run again: the next server reads the exit the
// attempt recorded and reports it.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestKillAfterAnExitNeverRunsItAgain(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	addr := testserver.FreeAddr(t)
	ledger := filepath.Join(dir, "ledger")
	script := fmt.Sprintf(`echo "$TASKACTIONS_RUN/$TASKACTIONS_ACTION" >> %s`, ledger)
	const rounds, perRound = 10, 4
	// The ledger is outside every output dir: the tasks run unconfined.
	args := []string{"--listen", addr, "--data-dir", dataDir, "--process-sandbox", "off"}
	for round := range rounds {
		p := startServer(t, args...)
		waitReady(t, p, addr)
		c := apiClient(t, addr, dataDir)
		before := len(lines(ledger))
		for i := range perRound {
			enqueueScript(t, c, client.RunIdentifier{Project: "exit", Domain: "dev", Name: fmt.Sprintf("r%d", round)}, fmt.Sprintf("a%d", i), script)
		}
		deadline := time.Now().Add(20 * time.Second)
		for len(lines(ledger)) == before {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no command ran; log:\n%s", round, tail(p.log()))
			}
			time.Sleep(500 * time.Microsecond)
		}
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.done
	}

	p := startServer(t, args...)
	waitReady(t, p, addr)
	c := apiClient(t, addr, dataDir)
	recovered := 0
	for round := range rounds {
		for i := range perRound {
			run := client.RunIdentifier{Project: "exit", Domain: "dev", Name: fmt.Sprintf("r%d", round)}
			a := waitEnded(t, c, run, fmt.Sprintf("a%d", i))
			if a.Phase != client.SUCCEEDED {
				t.Errorf("%s/a%d ended %s: %+v", run.Name, i, a.Phase, a.ErrorState)
			}
			if a.PluginPhase != nil && strings.Contains(*a.PluginPhase, "recorded before the server") {
				recovered++
			}
		}
	}
	runs := map[string]int{}
	for _, l := range lines(ledger) {
		if runs[l]++; runs[l] == 2 {
			t.Errorf("%s ran to its end twice", l)
		}
	}
	t.Logf("%d kills, %d commands run, %d exits read from their record by the next server", rounds, len(runs), recovered)
	if recovered == 0 {
		t.Error("no kill landed between an exit and its record: the loop missed its window")
	}
}
