package process

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"taskactions/internal/executor/plugins"
	"taskactions/internal/logs"
	"taskactions/internal/testenv"
)

// A shim whose gate is shut (the server died, or discarded it) runs
// nothing and records no exit.
func TestShutGateRunsNothing(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	cmd := exec.Command("/bin/sh", shimArgs("/bin/sh", []string{"-c", "touch " + ran})...)
	cmd.Dir, cmd.Env = dir, []string{markerEnv + "=m1", "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = strings.NewReader("") // the server's end closed, no word sent
	if err := cmd.Run(); err == nil {
		t.Error("a shim that was never let run exited 0")
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran behind a shut gate")
	}
	if _, ok := readExitRecord(dir, "m1"); ok {
		t.Error("a command that never ran has an exit record")
	}
}

// The first round reports RUNNING with the record of the attempt, its pid
// included, and runs nothing; the round that finds that record stored
// lets the command run.
func TestCommandRunsOnceItsRecordIsStored(t *testing.T) {
	p, tc := heldEnv(t, "echo ran >> count")
	tr, st := firstRound(t, p, tc)
	if tr.Phase != plugins.PhaseRunning || st.PID == 0 || st.StartTicks == 0 || st.Marker == "" || st.Instance != "i1" {
		t.Fatalf("first round: %v %q, state %+v: want RUNNING with a whole record", tr.Phase, tr.Info, st)
	}
	if n := runs(tc); n != 0 {
		t.Fatalf("the command ran %d times before its record was stored", n)
	}
	untilDone(t, p, stored(t, tc, st))
	if n := runs(tc); n != 1 {
		t.Fatalf("the command ran %d times, want once", n)
	}
}

// A round that does not find the record its first round reported (its
// write failed) ends the held shim, which ran nothing, and starts the
// attempt again under another marker.
func TestHeldCommandWithoutItsRecordNeverRuns(t *testing.T) {
	p, tc := heldEnv(t, "echo ran >> count")
	_, first := firstRound(t, p, tc)
	_, second := firstRound(t, p, tc)
	if second.Marker == first.Marker || second.PID == first.PID {
		t.Fatalf("the second round kept the first's record: %+v, %+v", first, second)
	}
	if !testenv.ProcessGone(first.PID) {
		t.Fatalf("the discarded shim %d still runs", first.PID)
	}
	untilDone(t, p, stored(t, tc, second))
	if n := runs(tc); n != 1 {
		t.Fatalf("the command ran %d times, want once (the discarded shim's never)", n)
	}
}

func heldEnv(t *testing.T, script string) (*Plugin, *plugins.TaskContext) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "p", "d", "r", "a")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := New("i1", logs.New(root, 0))
	tc := &plugins.TaskContext{Project: "p", Domain: "d", Run: "r", Action: "a", UID: "u1", Attempt: 1, OutputDir: dir,
		Template: plugins.Template{Type: "process", Container: plugins.Container{Command: []string{"sh", "-c", script}}}}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	return p, tc
}

// firstRound is a round of an attempt with no record stored.
func firstRound(t *testing.T, p *Plugin, tc *plugins.TaskContext) (plugins.Transition, State) {
	t.Helper()
	tr, err := p.Handle(context.Background(), tc)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := tr.State.(State)
	if !ok {
		t.Fatalf("first round: %v %q, no record", tr.Phase, tr.Info)
	}
	return tr, st
}

// stored is tc as a round reads it once st is stored.
func stored(t *testing.T, tc *plugins.TaskContext, st State) *plugins.TaskContext {
	t.Helper()
	b, err := plugins.EncodeState(st)
	if err != nil {
		t.Fatal(err)
	}
	return tc.WithState(stateVersion, b)
}

// untilDone runs rounds until the command has ended.
func untilDone(t *testing.T, p *Plugin, tc *plugins.TaskContext) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		tr, err := p.Handle(context.Background(), tc)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Phase == plugins.PhaseSuccess {
			return
		}
		if tr.Phase != plugins.PhaseRunning || time.Now().After(deadline) {
			t.Fatalf("round: %v %q %+v, want RUNNING until SUCCESS", tr.Phase, tr.Info, tr.Error)
		}
	}
}

func runs(tc *plugins.TaskContext) int {
	b, _ := os.ReadFile(filepath.Join(tc.OutputDir, "count"))
	return strings.Count(string(b), "ran")
}
