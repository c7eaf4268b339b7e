package process

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"taskactions/internal/executor/plugins"
)

// The shim records the command's exit where readExitRecord looks, before
// it exits itself, and exited reads a code as the plugin reports it.
func TestShimRecordsTheExit(t *testing.T) {
	for _, tc := range []struct {
		script string
		code   int
		phase  plugins.Phase
	}{
		{"exit 0", 0, plugins.PhaseSuccess},
		{"exit 3", 3, plugins.PhaseRetryableFailure},
		{"kill -TERM $$", 128 + 15, plugins.PhaseRetryableFailure},
	} {
		t.Run(tc.script, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("/bin/sh", shimArgs("/bin/sh", []string{"-c", tc.script})...)
			cmd.Dir, cmd.Env = dir, []string{markerEnv + "=m1", "PATH=" + os.Getenv("PATH")}
			cmd.Stdin = strings.NewReader(gateWord + "\n") // its record stored: the gate opens
			err := cmd.Run()
			if got := cmd.ProcessState.ExitCode(); got != tc.code {
				t.Fatalf("shim exit %d (%v), want %d", got, err, tc.code)
			}
			code, ok := readExitRecord(dir, "m1")
			if !ok || code != tc.code {
				t.Fatalf("record %d %v, want %d", code, ok, tc.code)
			}
			if _, ok := readExitRecord(dir, "m2"); ok {
				t.Fatal("another attempt's marker read this attempt's record")
			}
			if tr := exited(code, ""); tr.Phase != tc.phase {
				t.Fatalf("phase %v, want %v", tr.Phase, tc.phase)
			}
		})
	}
}

// A record that is not a whole exit code is no record.
func TestExitRecordRefusesGarbage(t *testing.T) {
	for _, body := range []string{"", "abc", "-1", "256", "1\n2"} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, exitRecordName("m")), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, ok := readExitRecord(dir, "m"); ok {
			t.Errorf("%q read as exit %d", body, code)
		}
	}
}
