package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// Without cgroups (--process-cgroups=false, as on a host that has none to
// give), what a task starts in a session of its own still dies with its
// attempt: the server is a subreaper and sweeps it when the attempt exits
// or is aborted, and the next start sweeps what a killed server left.
func TestSetsidChildrenDieWithoutCgroups(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	addr := testserver.FreeAddr(t)
	args := []string{"--listen", addr, "--data-dir", dataDir, "--process-sandbox", "off", "--process-cgroups=false"}
	p := startServer(t, args...)
	waitReady(t, p, addr)
	c := apiClient(t, addr, dataDir)
	if !strings.Contains(p.log(), "swept by a subreaper") {
		t.Fatalf("the server did not fall back on a subreaper; log:\n%s", tail(p.log()))
	}
	run := client.RunIdentifier{Project: "reap", Domain: "dev", Name: "r1"}
	escaped := func(name string) string { return filepath.Join(dir, name+".pid") }
	for _, tc := range []struct{ name, script string }{
		{"exits", `setsid sleep 1000 & echo $! > %s`},
		{"clears-env", `env -i setsid sleep 1000 & echo $! > %s`},
		{"double-forks", `(setsid sleep 1000 & echo $! > %s) &`},
		{"aborted", `setsid sleep 1000 & echo $! > %s; sleep 1000`},
	} {
		enqueueScript(t, c, run, tc.name, fmt.Sprintf(tc.script, escaped(tc.name)))
		pid := waitPidFile(t, escaped(tc.name))
		if tc.name == "aborted" {
			resp, err := c.AbortActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, tc.name, client.AbortRequest{})
			if err != nil || resp.StatusCode() >= 300 {
				t.Fatalf("abort: %v %s", err, resp.Body)
			}
		}
		waitEnded(t, c, run, tc.name)
		waitGone(t, pid, tc.name)
		if ppid := zombieParent(pid); ppid == p.cmd.Process.Pid {
			t.Errorf("%s: pid %d is a zombie the server never reaped", tc.name, pid)
		}
	}

	// A server killed while the task runs leaves its setsid child behind
	// (nothing is its subreaper then): the next start kills it. The next
	// start also runs the action again; that attempt writes nothing (the
	// pid file is there), so the test's dir is not written to as it is
	// removed.
	killed := escaped("killed")
	enqueueScript(t, c, run, "killed", fmt.Sprintf(`[ -e %[1]s ] && exec sleep 1000; setsid sleep 1000 & echo $! > %[1]s.tmp; mv %[1]s.tmp %[1]s; sleep 1000`, killed))
	pid := waitPidFile(t, killed)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p = startServer(t, args...)
	waitReady(t, p, addr)
	waitGone(t, pid, "killed")
	// Stopped, not killed, the server ends the attempt it started again.
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.done
}

// waitPidFile waits for a task to write a pid to path.
func waitPidFile(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			// Should the test fail, nothing it started outlives it.
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGone waits for pid to be gone (reaped, not a zombie).
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: pid %d, started with setsid, outlived its attempt", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zombieParent is the parent of pid if it is a zombie, else 0.
func zombieParent(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 || f[0] != "Z" {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
