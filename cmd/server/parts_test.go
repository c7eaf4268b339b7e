package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"taskactions/internal/failpoint"
	"taskactions/test/testserver"
)

// A server whose embedded etcd dies under it stops, exit 1, with the
// cause in its log, instead of serving a cache that no longer changes;
// one whose Stage controller cannot start never says it is ready.
func TestServerStopsWhenAPartDies(t *testing.T) {
	for _, tc := range []struct {
		failpoint, cause string
		wasReady         bool
	}{
		{failpoint.EtcdDies, "control plane: etcd", true},
		{failpoint.StageControllerFails, "stage controller: cannot watch Promotions", false},
	} {
		t.Run(tc.failpoint, func(t *testing.T) {
			addr := testserver.FreeAddr(t)
			cmd := exec.Command(os.Args[0], "--listen", addr, "--data-dir", filepath.Join(t.TempDir(), "data"))
			cmd.Env = append(cmd.Env, "TASKACTIONS_FAILPOINT="+tc.failpoint)
			p := startCommand(t, cmd)
			select {
			case <-p.done:
			case <-time.After(2 * time.Minute):
				t.Fatalf("still running with %s armed; log:\n%s", tc.failpoint, p.stderr)
			}
			var exit *exec.ExitError
			if !errors.As(p.err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit %v, want 1; log:\n%s", p.err, p.stderr)
			}
			log := p.stderr.String()
			if !strings.Contains(log, tc.cause) {
				t.Errorf("the log does not name the cause %q:\n%s", tc.cause, log)
			}
			if got := strings.Contains(log, `"message":"ready"`); got != tc.wasReady {
				t.Errorf("logged ready: %v, want %v", got, tc.wasReady)
			}
		})
	}
}
