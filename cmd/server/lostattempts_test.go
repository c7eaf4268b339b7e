package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// The rule for lost attempts (docs/executor.md): each crash costs each
// attempt it interrupted one system failure, and a lost attempt never ends
// an action however many crashes it spans. A task in flight through more
// kill -9s than --max-system-failures (its default, 5) still runs to its
// end, with one system failure counted per crash, no more.
func TestCrashesNeverFailATaskForGood(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	addr := testserver.FreeAddr(t)
	args := []string{"--listen", addr, "--data-dir", dataDir, "--process-sandbox", "off"}
	const kills = 7
	run := client.RunIdentifier{Project: "crash", Domain: "dev", Name: "r1"}
	started := filepath.Join(dir, "started")
	// Each attempt says it started; the one after the last kill ends.
	script := fmt.Sprintf(`echo "$TASKACTIONS_ATTEMPT" >> %s; [ "$TASKACTIONS_ATTEMPT" -gt %d ] && exit 0; exec sleep 1000`, started, kills)

	for k := range kills {
		p := startServer(t, args...)
		waitReady(t, p, addr)
		if k == 0 {
			enqueueScript(t, apiClient(t, addr, dataDir), run, "long", script)
		}
		waitLines(t, started, k+1)
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.done
	}
	p := startServer(t, args...)
	waitReady(t, p, addr)
	a := waitEnded(t, apiClient(t, addr, dataDir), run, "long")
	if a.Phase != client.SUCCEEDED {
		t.Fatalf("after %d kills the task ended %s (%+v), want SUCCEEDED", kills, a.Phase, a.ErrorState)
	}
	if a.SystemFailures != kills {
		t.Errorf("systemFailures %v after %d kills, want one per kill", a.SystemFailures, kills)
	}
	if n := len(lines(started)); n != kills+1 {
		t.Errorf("%d attempts started, want %d (one per server)", n, kills+1)
	}
}

// waitLines waits until the file at path holds n lines.
func waitLines(t *testing.T, path string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(lines(path)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d lines in %s, want %d", len(lines(path)), path, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
