package executor

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/executor/plugins/process"
	"taskactions/internal/taskactions"
)

// The executor counts each attempt it ends by its outcome, and exports
// its queue: what an operator reads to tell a failing fleet from a slow one.
func TestMetricsCountAttemptsByOutcome(t *testing.T) {
	reg := prometheus.NewRegistry()
	out := t.TempDir()
	mgr := startManager(t)
	run := newRun()
	// An attempt a dead server left, to be counted lost.
	lost := id(run, "lost")
	if _, _, err := mgr.Enqueue(context.Background(), taskactions.EnqueueRequest{ID: lost, TaskType: "process",
		TaskTemplate: []byte(`{"type":"process","container":{"command":["true"]}}`)}); err != nil {
		t.Fatal(err)
	}
	state, _ := plugins.EncodeState(process.State{Marker: "m-metrics", Instance: "dead"})
	if _, err := mgr.UpdateStatus(context.Background(), lost, func(t *v1.TaskAction) error {
		t.Status.Attempts, t.Status.PluginState, t.Status.PluginStateVersion = 1, state, 2
		setPhase(t, v1.PhaseInitializing, v1.ReasonInitializing, "", false)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mgr.StopWatching()

	e := startEnv(t, out, func(c *Config) { c.Metrics = reg })
	enqueue(t, e, id(run, "ok"), `{"type":"echo"}`, "")
	enqueue(t, e, id(run, "bad"), `{"type":"process","metadata":{"retries":1},"container":{"command":["sh","-c","exit 7"]}}`, "")
	enqueue(t, e, id(run, "slow"), `{"type":"sleep","metadata":{"timeout":"100ms"},"custom":{"duration":"1h"}}`, "")
	enqueue(t, e, id(run, "odd"), `{"type":"echo","metadata":{"timeout":"never"}}`, "")
	for _, name := range []string{"lost", "ok", "bad", "slow", "odd"} {
		await(t, e, id(run, name), 30*time.Second, "terminal", finished)
	}
	want := map[string]float64{
		outcomeLost: 1, outcomeSucceeded: 2, // the lost one ran again, and succeeded
		outcomeFailed: 2, outcomeTimedOut: 1, outcomeRefused: 1, outcomeSystemFailure: 0, outcomeCacheHit: 0,
	}
	for outcome, n := range want {
		if got := testutil.ToFloat64(e.ex.metrics.outcomes.WithLabelValues(outcome)); got != n {
			t.Errorf("attempts %s: %v, want %v", outcome, got, n)
		}
	}
	// The event of the last terminal write queues its key once more, and a
	// worker takes it a moment after the cache shows the action ended: the
	// queue drains then.
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(e.ex.metrics.depth) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := testutil.ToFloat64(e.ex.metrics.depth); got != 0 {
		t.Errorf("queue depth %v 5 s after every action ended, want 0", got)
	}
	n, err := testutil.GatherAndCount(reg, "taskactions_executor_queue_wait_seconds", "taskactions_executor_attempts_total")
	if err != nil || n != 1+len(want) {
		t.Errorf("%d series exported (%v), want the queue wait and %d outcomes", n, err, len(want))
	}
}
