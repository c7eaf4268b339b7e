package executor

import (
	"sync/atomic"
	"testing"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
)

// An action Admit holds back waits without a status of its plugin's and
// runs once admitted; one Admit refuses fails with the refusal's code and
// message, its plugin never asked; Admit's verdict is asked of every
// action's rounds, and others run as ever.
func TestAdmit(t *testing.T) {
	var open atomic.Bool
	e := startEnv(t, t.TempDir(), func(c *Config) {
		c.Admit = func(tc *plugins.TaskContext) (string, *plugins.ExecutionError) {
			switch {
			case tc.Action == "refused":
				return "", &plugins.ExecutionError{Code: "NotAPromotionStep", Message: "no step anyone decided"}
			case tc.Action == "held" && !open.Load():
				return "waiting", nil
			}
			return "", nil
		}
	})
	run := newRun()
	for _, name := range []string{"held", "refused", "other"} {
		enqueue(t, e, id(run, name), `{"type":"echo"}`, "")
	}
	refused := await(t, e, id(run, "refused"), 20*time.Second, "FAILED", finished)
	if s := refused.Status; v1.PhaseOf(s.Conditions) != v1.PhaseFailed || s.ErrorState == nil ||
		s.ErrorState.Code != "NotAPromotionStep" || s.ErrorState.Message != "no step anyone decided" || s.PluginPhase != "" {
		t.Errorf("refused: %s %+v, plugin phase %q; want FAILED with the refusal, the plugin never asked", v1.PhaseOf(s.Conditions), s.ErrorState, s.PluginPhase)
	}
	await(t, e, id(run, "other"), 20*time.Second, "SUCCEEDED", finished)
	before, err := e.mgr.GetTaskAction(t.Context(), id(run, "held"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // several rounds of the held action
	held, err := e.mgr.GetTaskAction(t.Context(), id(run, "held"))
	if err != nil {
		t.Fatal(err)
	}
	if len(held.Status.Conditions) != 0 || held.ResourceVersion != before.ResourceVersion {
		t.Fatalf("held: conditions %+v, resource version %s then %s; want nothing written", held.Status.Conditions, before.ResourceVersion, held.ResourceVersion)
	}
	open.Store(true)
	if got := await(t, e, id(run, "held"), 20*time.Second, "SUCCEEDED", finished); v1.PhaseOf(got.Status.Conditions) != v1.PhaseSucceeded {
		t.Errorf("admitted: %s", v1.PhaseOf(got.Status.Conditions))
	}
}
