// Package testenv starts the real embedded control plane for a test
// package's TestMain, so tests run against etcd and the API server rather
// than fakes, and pay the start-up once per package.
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"taskactions/internal/controlplane"
	"taskactions/internal/logging"
)

// ControlPlane is a started embedded control plane in a temporary dir.
type ControlPlane struct {
	*controlplane.ControlPlane
	Dir     string // parent of DataDir, removed by Stop
	DataDir string
}

// Start starts one. Logs are discarded unless TASKACTIONS_TEST_LOG names a
// level (debug, info, ...).
func Start() (*ControlPlane, error) {
	log := Logger()
	logging.RouteKlog(log)
	dir, err := os.MkdirTemp("", "ta")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: data, Log: log})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start control plane: %w", err)
	}
	return &ControlPlane{ControlPlane: cp, Dir: dir, DataDir: data}, nil
}

// Stop stops the control plane and removes its dir.
func (c *ControlPlane) Stop() error {
	err := c.ControlPlane.Stop()
	_ = os.RemoveAll(c.Dir)
	return err
}

// Logger is the logger tests hand to components.
func Logger() zerolog.Logger {
	lvl := os.Getenv("TASKACTIONS_TEST_LOG")
	if lvl == "" {
		return zerolog.Nop()
	}
	log, err := logging.New(os.Stderr, lvl, logging.FormatConsole)
	if err != nil {
		return zerolog.Nop()
	}
	return log
}

// Main runs a test package's tests against one control plane, stored in
// *cp for the tests to use.
func Main(m interface{ Run() int }, cp **ControlPlane) int {
	c, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*cp = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop control plane:", err)
		code = 1
	}
	return code
}

// Eventually polls cond every 10 ms until it holds, and fails t when
// timeout passes first.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ProcessGone reports whether a process is gone: no such process, or a
// zombie left for init to reap.
func ProcessGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}
