package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"taskactions/internal/testenv"
)

// The start's sweep kills what a killed server left under its output
// root: a process of an attempt, and the group it leads, whose members
// may have cleared their environment. What another server's root holds
// it leaves alone. It is why actions deleted while no server ran need no
// finalizer.
func TestStartSweepKillsWhatAKilledServerLeft(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	left, leftChild := leftover(t, root)
	kept, _ := leftover(t, other)
	reaper{on: true, root: filepath.Clean(root)}.sweepRoot()
	for deadline := time.Now().Add(10 * time.Second); !testenv.ProcessGone(left) || !testenv.ProcessGone(leftChild); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("left behind: pid %d (gone %v) and its unmarked child %d (gone %v)",
				left, testenv.ProcessGone(left), leftChild, testenv.ProcessGone(leftChild))
		}
	}
	if testenv.ProcessGone(kept) {
		t.Errorf("the sweep killed pid %d, under another server's root", kept)
	}
}

// leftover starts what a killed server's attempt under root may leave: a
// marked process in a session of its own, with a child that cleared its
// environment.
func leftover(t *testing.T, root string) (leader, child int) {
	t.Helper()
	dir := filepath.Join(root, "p", "d", "r", "a")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "env -i sleep 300 & echo $! > child.pid; exec sleep 300")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), markerEnv + "=m-" + filepath.Base(root), "TASKACTIONS_OUTPUT_DIR=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // reaped here: the sweep's reaper is not its parent
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	for deadline := time.Now().Add(10 * time.Second); child == 0; time.Sleep(10 * time.Millisecond) {
		child = readPIDFile(filepath.Join(dir, "child.pid"))
		if time.Now().After(deadline) {
			t.Fatal("the leftover's child did not start")
		}
	}
	return cmd.Process.Pid, child
}

// readPIDFile reads a pid a shell wrote whole (0: not yet).
func readPIDFile(path string) int {
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(b), "\n") {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
