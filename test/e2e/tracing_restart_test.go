package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"taskactions/internal/app"
	"taskactions/internal/tracing"
	"taskactions/pkg/client"
)

// tracingServeEnv, set to a data dir, makes TestTracingServerProcess a
// server on it (listening on serverListenEnv), tracing as the standard
// OTEL_* variables of its environment say, for TestTraceOfARunAcrossRestart
// to SIGKILL; otherwise that test does nothing.
const tracingServeEnv = "TASKACTIONS_E2E_TRACING_SERVER"

func TestTracingServerProcess(t *testing.T) {
	serveFromEnv(t, tracingServeEnv, func(c *app.Config) {
		var err error
		if c.Tracing, err = tracing.FromEnv(os.LookupEnv); err != nil {
			t.Fatal(err)
		}
	})
}

// A run stays one trace across a restart of its server, a clean stop or a
// SIGKILL: the attempts that end after it, on the next server on the same
// data dir, are in the trace of the request that enqueued the run, each
// under its action's enqueue as the attempts before the restart were. The
// root a0 is a process that waits for a file the test writes after the
// restart (a stop interrupts it and the next server starts it over; a kill
// loses it, and the next server ends it as lost and runs attempt 2); its
// child c1 is a sleep, which the next server resumes where it was.
func TestTraceOfARunAcrossRestart(t *testing.T) {
	t.Run("stop", func(t *testing.T) { traceAcrossRestart(t, false) })
	t.Run("kill", func(t *testing.T) { traceAcrossRestart(t, true) })
}

func traceAcrossRestart(t *testing.T, kill bool) {
	recv := newOTLPReceiver(t)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	traced := func(c *app.Config) {
		c.Tracing = tracing.Config{Enabled: true, Endpoint: recv.URL + "/v1/traces", BatchTimeout: 50 * time.Millisecond}
	}
	var s1 *server
	var exited <-chan struct{}
	var stop func() error
	if kill {
		// The process is this test binary: the standard variables, as an
		// operator sets them, with a short batching so the enqueues' spans
		// are exported before the kill.
		var cmd *exec.Cmd
		s1, exited, cmd = startServerProcess(t, "TestTracingServerProcess", tracingServeEnv, dir, dataDir,
			"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_BSP_SCHEDULE_DELAY=50")
		stop = func() error { err := cmd.Process.Kill(); <-exited; return err }
	} else {
		var err error
		if s1, err = startServer(dataDir, traced); err != nil {
			t.Fatal(err)
		}
		stopped := false
		t.Cleanup(func() {
			if !stopped {
				_ = s1.Stop()
			}
		})
		stop = func() error { stopped = true; return s1.Stop() }
	}
	ctx := context.Background()
	run := newRun()

	a0 := actionSpec(run, "a0", "", "process")
	wait := []string{"sh", "-c", `while [ ! -e go ]; do sleep 0.05; done`} // go: in its output dir, its cwd
	a0.Action.Task.TaskTemplate.Container = &client.Container{Command: &wait}
	resp, err := s1.api.EnqueueActionWithResponse(ctx, a0)
	if err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue a0: %v %v", err, resp)
	}
	runTrace := traceOf(t, resp.HTTPResponse.Header.Get("Traceresponse"))
	// Long enough to be sleeping still when the server stops: the test
	// stops it as soon as c1 runs and the enqueues' spans are exported.
	c1 := actionSpec(run, "c1", "a0", "sleep")
	custom := map[string]any{"duration": "8s"}
	c1.Action.Task.TaskTemplate.Custom = &custom
	if resp, err := s1.api.EnqueueActionWithResponse(ctx, c1); err != nil || resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue c1: %v %v", err, resp)
	}
	for _, name := range []string{"a0", "c1"} {
		waitAction(t, s1.api, run, name, func(a *client.Action) bool { return a.Phase == client.RUNNING })
	}
	inRun := inTrace(runTrace)
	reqA0 := recv.one(t, "the request that enqueued a0", spanNamed("POST /api/v1/actions"), inRun, func(s *tracepb.Span) bool { return len(s.ParentSpanId) == 0 })
	enq := map[string]*tracepb.Span{
		"a0": recv.one(t, "a0's enqueue", spanNamed("enqueue process"), action("a0"), childOf(reqA0)),
	}
	enq["c1"] = recv.one(t, "c1's enqueue", spanNamed("enqueue sleep"), action("c1"), childOf(enq["a0"]))

	stoppedAt := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("stop the first server: %v", err)
	}
	if !kill {
		// A stop ends the spans of what it cut short: this is the trace
		// the attempts after the restart must continue.
		for name, task := range map[string]string{"a0": "process", "c1": "sleep"} {
			recv.one(t, name+"'s attempt the stop interrupted", spanNamed("attempt "+task), action(name),
				withAttr("taskactions.outcome", "interrupted"), childOf(enq[name]))
		}
	}

	s2, err := startServer(dataDir, traced)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	if err := os.WriteFile(filepath.Join(dataDir, "outputs", run.Project, run.Domain, run.Name, "a0", "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a0", "c1"} {
		if a := waitAction(t, s2.api, run, name, terminal); a.Phase != client.SUCCEEDED {
			t.Fatalf("%s ended %s: %+v", name, a.Phase, a.ErrorState)
		}
	}

	// The attempts the second server ended: found by what only it can
	// have written, then checked to be where the run's trace has them.
	type ended struct{ name, task, attempt, outcome, resumed string }
	want := []ended{
		{"a0", "process", "1", "succeeded", "false"}, // started over after the stop
		{"c1", "sleep", "1", "succeeded", "true"},
	}
	if kill {
		want = []ended{
			{"a0", "process", "1", "lost", "true"},
			{"a0", "process", "2", "succeeded", "false"},
			{"c1", "sleep", "1", "succeeded", "true"},
		}
	}
	for _, w := range want {
		what := w.name + "'s attempt " + w.attempt + " (" + w.outcome + ") after the restart"
		sp := recv.one(t, what, spanNamed("attempt "+w.task), action(w.name),
			withAttr("taskactions.attempt", w.attempt), withAttr("taskactions.outcome", w.outcome))
		if !inRun(sp) || !childOf(enq[w.name])(sp) {
			t.Errorf("%s: trace %x parent %x, want trace %s under %s's enqueue %s", what, sp.TraceId, sp.ParentSpanId, runTrace, w.name, spanID(enq[w.name]))
		}
		if got := attr(sp.Attributes, "taskactions.resumed"); got != w.resumed {
			t.Errorf("%s: taskactions.resumed %s, want %s", what, got, w.resumed)
		}
		// A resumed attempt's span starts when the attempt did, on the
		// first server, as its phase history says.
		if w.resumed == "true" && time.Unix(0, int64(sp.StartTimeUnixNano)).After(stoppedAt) {
			t.Errorf("%s starts at %v, after the first server's stop at %v", what, time.Unix(0, int64(sp.StartTimeUnixNano)), stoppedAt)
		}
		if w.outcome == "succeeded" && w.task == "process" {
			recv.one(t, "the process of "+what, spanNamed("process"), childOf(sp))
		}
	}
	// And nothing of the run's actions went anywhere else: every attempt,
	// before the restart or after, is under its action's enqueue.
	for name, task := range map[string]string{"a0": "process", "c1": "sleep"} {
		for _, sp := range recv.find(action(name)) {
			if !inRun(sp) {
				t.Errorf("%s's span %s is in trace %x, not the run's %s", name, sp.Name, sp.TraceId, runTrace)
			}
			if sp.Name == "attempt "+task && !childOf(enq[name])(sp) {
				t.Errorf("%s's attempt %s (%s) is under %x, not its enqueue %s", name, attr(sp.Attributes, "taskactions.attempt"),
					attr(sp.Attributes, "taskactions.outcome"), sp.ParentSpanId, spanID(enq[name]))
			}
		}
	}
}
