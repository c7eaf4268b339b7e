package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"taskactions/internal/app"
	"taskactions/internal/failpoint"
	"taskactions/pkg/client"
)

// historyServeEnv, set to a data dir, makes TestHistoryServerProcess a
// server on it (listening on serverListenEnv) with a one-second retention,
// for the crash tests to SIGKILL; otherwise that test does nothing.
const historyServeEnv = "TASKACTIONS_E2E_HISTORY_SERVER"

func TestHistoryServerProcess(t *testing.T) {
	serveFromEnv(t, historyServeEnv, func(c *app.Config) { c.Retention = time.Second })
}

// A server SIGKILLed at each step of recording a finished action (the
// terminal status written; history has it; the object deleted by
// retention), then restarted on its data
// dir: the action ends with one terminal phase, history has it exactly
// once (the run counts one action, succeeded once), its object is
// retired, and it reads as it should.
func TestCrashAtEachStepOfRecording(t *testing.T) {
	for _, fp := range []string{failpoint.TerminalWritten, failpoint.Recorded, failpoint.Retired} {
		t.Run(fp, func(t *testing.T) {
			dir := t.TempDir()
			dataDir := filepath.Join(dir, "data")
			s1, exited, _ := startServerProcess(t, "TestHistoryServerProcess", historyServeEnv, dir, dataDir, "TASKACTIONS_FAILPOINT="+fp)
			run := newRun()
			resp, err := s1.api.EnqueueActionWithResponse(context.Background(), actionSpec(run, "root", "", "echo"))
			if err != nil || resp.StatusCode() != http.StatusCreated {
				t.Fatalf("enqueue: %v %v", err, resp)
			}
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("the server did not reach failpoint %s", fp)
			}

			s2, err := startServer(dataDir, func(c *app.Config) { c.Retention = time.Second })
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Stop()
			base := "/projects/" + run.Project + "/domains/" + run.Domain + "/runs/" + run.Name
			eventually(t, 30*time.Second, "the action to be recorded and retired", func() bool {
				code, b := s2.get(t, base)
				return code == 200 && contains(string(b), `"actionCount":1,`) && liveObjects(s2, run) == 0
			})
			_, b := s2.get(t, base)
			var sum client.RunSummary
			mustJSON(t, b, &sum)
			if sum.Phase != client.SUCCEEDED || len(sum.PhaseCounts) != 1 || sum.PhaseCounts["SUCCEEDED"] != 1 || sum.EndedAt == nil {
				t.Errorf("run summary after the crash at %s: %s", fp, b)
			}
			code, b := s2.get(t, base+"/actions/root")
			var a client.Action
			if code != 200 || json.Unmarshal(b, &a) != nil {
				t.Fatalf("GET the retired action: %d %s", code, b)
			}
			succeeded := 0
			for _, h := range a.PhaseHistory {
				if h.Phase == client.SUCCEEDED {
					succeeded++
				}
			}
			if a.Phase != client.SUCCEEDED || a.Attempts != 1 || succeeded != 1 {
				t.Errorf("the action after the crash at %s: phase %s, %d attempts, %d SUCCEEDED in its history", fp, a.Phase, a.Attempts, succeeded)
			}
		})
	}
}
