package process

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"taskactions/internal/executor/plugins"
)

// A server that may not confine its tasks (no Landlock where it is
// required) fails each process task for good, with the reason it was
// given, and runs nothing.
func TestRefusedConfinementFailsTheTask(t *testing.T) {
	p := New("test", nil)
	p.confine = &Confinement{Refuse: "this kernel has no Landlock"}
	ran := filepath.Join(t.TempDir(), "ran")
	tc := &plugins.TaskContext{UID: "u1", Attempt: 1, OutputDir: t.TempDir(),
		Template: plugins.Template{Type: "process", Container: plugins.Container{Command: []string{"touch", ran}}}}
	tr, err := p.start(context.Background(), tc)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Phase != plugins.PhasePermanentFailure || tr.Error == nil || tr.Error.Code != "SandboxUnavailable" || tr.Error.Message != p.confine.Refuse {
		t.Fatalf("transition %+v (error %+v), want a permanent SandboxUnavailable failure with the reason", tr, tr.Error)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran")
	}
}
