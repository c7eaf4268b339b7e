package git

import (
	"context"
	"os"
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
	var helper int
	for helper == 0 {
		b, _ := os.ReadFile(pidFile)
		helper, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
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

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}
