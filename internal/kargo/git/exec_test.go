package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A command whose context ends is killed with the helpers it started,
// which hold its output: git's remote helpers do, and one that hung on the
// network kept an aborted step running until it gave up.
func TestCommandEndsWithItsHelpers(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	ctx, cancel := context.WithCancel(context.Background())
	// The shell waits on a helper that inherited its output, as git waits
	// on git-remote-http.
	cmd := commandContext(ctx, "sh", "-c", `sleep 300 & echo $! > `+pidFile+`; wait`)
	done := make(chan error, 1)
	go func() { _, err := run(cmd, nil); done <- err }()
	helper := readPid(t, pidFile)
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a killed command returned no error")
		}
	case <-time.After(time.Minute): // the helper would hold the pipe for 300 s
		t.Fatal("the command did not return once its context ended")
	}
	// The helper is gone too (a zombie of init's, at worst, for a moment).
	for range 100 {
		if syscall.Kill(helper, 0) != nil || isZombie(helper) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("the helper %d outlived its command", helper)
}

// serverEnv switches the test binary into the server's part.
const serverEnv = "GIT_TEST_SERVER"

// A command, and the helpers it started, die with the server: a git
// command hung on the network outlived a kill -9 of the server, as long
// as the network kept it.
func TestCommandDiesWithTheServer(t *testing.T) {
	if pidFile := os.Getenv(serverEnv); pidFile != "" {
		cmd := commandContext(context.Background(), "sh", "-c", `sleep 300 & echo $! > `+pidFile+`; wait`)
		_, err := run(cmd, nil)
		t.Fatalf("the command ended while the server lived: %v", err)
	}
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	server := exec.Command(os.Args[0], "-test.run=^TestCommandDiesWithTheServer$")
	server.Env = append(os.Environ(), serverEnv+"="+pidFile)
	server.Stdout, server.Stderr = os.Stdout, os.Stderr
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer server.Process.Kill()
	helper := readPid(t, pidFile)
	if err := server.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = server.Wait() // killed: its status says nothing
	for range 250 {
		if syscall.Kill(helper, 0) != nil || isZombie(helper) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(helper, syscall.SIGKILL)
	t.Errorf("the helper %d outlived the server by 5 s", helper)
}

// readPid waits for a pid in path.
func readPid(t *testing.T, path string) int {
	t.Helper()
	for range 1500 {
		b, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no helper started")
	return 0
}

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}
