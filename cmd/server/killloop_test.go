package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"taskactions/test/testserver"
	"testing"
	"time"
)

// A kill loop aimed at the window between starting a process and recording
// it: each round enqueues process actions and SIGKILLs the server the
// moment one of them has started. Whatever the timing, no attempt ever runs
// twice, and nothing a server started outlives it by more than a second.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestKillLoopNeverRunsAnAttemptTwice(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	addr := testserver.FreeAddr(t)
	ledger, pids := filepath.Join(dir, "ledger"), filepath.Join(dir, "pids")
	// Each run of an attempt writes one ledger line, and the pids of the
	// shell and of its child.
	script := fmt.Sprintf(`echo "$TASKACTIONS_RUN/$TASKACTIONS_ACTION $TASKACTIONS_ATTEMPT" >> %s; echo $$ >> %s; sleep 0.3 & echo $! >> %s; wait`, ledger, pids, pids)
	tmpl, _ := json.Marshal(map[string]any{"type": "process", "container": map[string]any{"command": []string{"sh", "-c", script}}})
	const rounds, perRound = 12, 4
	// The ledger is outside every output dir (it counts runs across
	// restarts): the tasks run unconfined.
	args := []string{"--listen", addr, "--data-dir", dataDir, "--max-system-failures", "1000", "--process-sandbox", "off"}

	for round := range rounds {
		p := startServer(t, args...)
		waitReady(t, p, addr)
		token := adminToken(t, dataDir)
		before := len(lines(ledger))
		for i := range perRound {
			body := enqueueBody("kill", fmt.Sprintf("r%d", round), fmt.Sprintf("a%d", i), string(tmpl))
			if code, resp := call(t, "POST", "http://"+addr+"/api/v1/actions", token, body); code != http.StatusCreated {
				t.Fatalf("round %d: enqueue: %d %s", round, code, resp)
			}
		}
		// Aim: kill the moment a process of this round has started.
		deadline := time.Now().Add(20 * time.Second)
		for len(lines(ledger)) == before {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no process started; log:\n%s", round, p.stderr)
			}
			time.Sleep(time.Millisecond)
		}
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.done
		killed := time.Now()
		for _, pid := range pidsIn(t, pids) {
			for !processGone(pid) {
				if time.Since(killed) > time.Second {
					t.Fatalf("round %d: pid %d outlived its server by more than a second", round, pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}

	// One more server finishes what the others left.
	p := startServer(t, args...)
	waitReady(t, p, addr)
	token := adminToken(t, dataDir)
	lost := 0
	for round := range rounds {
		for i := range perRound {
			url := fmt.Sprintf("http://%s/api/v1/projects/kill/domains/dev/runs/r%d/actions/a%d", addr, round, i)
			var a struct {
				Phase          string `json:"phase"`
				SystemFailures int    `json:"systemFailures"`
			}
			deadline := time.Now().Add(time.Minute)
			for a.Phase != "SUCCEEDED" {
				if time.Now().After(deadline) {
					t.Fatalf("r%d/a%d ended %s", round, i, a.Phase)
				}
				time.Sleep(50 * time.Millisecond)
				_, body := call(t, "GET", url, token, "")
				_ = json.Unmarshal([]byte(body), &a)
			}
			lost += a.SystemFailures
		}
	}
	runs := map[string]int{}
	for _, l := range lines(ledger) {
		runs[l]++
		if runs[l] == 2 {
			t.Errorf("attempt %q ran twice", l)
		}
	}
	t.Logf("%d kills, %d attempts run, %d attempts lost with their server and retried", rounds, len(runs), lost)
	if lost == 0 {
		t.Error("no kill landed while an attempt ran: the loop missed its window")
	}
}

func lines(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "#"))
}

func pidsIn(t *testing.T, path string) []int {
	t.Helper()
	var out []int
	for _, l := range lines(path) {
		if pid, err := strconv.Atoi(l); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
