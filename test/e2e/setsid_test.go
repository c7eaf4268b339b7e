package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"taskactions/internal/testenv"
	"taskactions/pkg/client"
)

// A process a task starts in a session of its own (setsid: out of the
// attempt's process group) dies with the attempt: when the task is
// aborted, when it times out, and when it exits leaving it behind.
func TestSetsidChildDiesWithItsAttempt(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, script, timeout string
		abort                 bool
	}{
		{"aborted", `setsid sleep 1000 & echo $! > escaped.pid; sleep 1000`, "", true},
		{"timed out", `setsid sleep 1000 & echo $! > escaped.pid; sleep 1000`, "2s", false},
		{"exited", `setsid sleep 1000 & echo $! > escaped.pid`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := newRun()
			enqueueProcessWith(t, srv, run, "a0", tc.script, func(tt *client.TaskTemplate) {
				if tc.timeout != "" {
					tt.Metadata = &client.TaskMetadata{Timeout: &tc.timeout}
				}
			})
			pidFile := filepath.Join(srv.dataDir, "outputs", run.Project, run.Domain, run.Name, "a0", "escaped.pid")
			var pid int
			deadline := time.Now().Add(30 * time.Second)
			for pid == 0 {
				if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
					pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
				if time.Now().After(deadline) {
					t.Fatal("the task did not start its child")
				}
				time.Sleep(20 * time.Millisecond)
			}
			if tc.abort {
				if resp, err := srv.api.AbortActionWithResponse(ctx, run.Project, run.Domain, run.Name, "a0", client.AbortRequest{}); err != nil || resp.StatusCode() >= 300 {
					t.Fatalf("abort: %v %v", err, resp)
				}
			}
			a := waitAction(t, srv.api, run, "a0", terminal)
			if tc.timeout != "" && a.Phase != client.TIMEDOUT {
				t.Errorf("the task ended %s, want TIMED_OUT", a.Phase)
			}
			deadline = time.Now().Add(10 * time.Second)
			for !testenv.ProcessGone(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("pid %d, started with setsid, outlived its attempt", pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
