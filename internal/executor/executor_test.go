package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/executor/plugins/echo"
	"taskactions/internal/executor/plugins/process"
	"taskactions/internal/executor/plugins/sleep"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/logs"
	"taskactions/internal/taskactions"
	"taskactions/internal/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &cp)) }

// env is a manager and an executor on the shared control plane, as a
// server runs them. stop is what a server stop does to them.
type env struct {
	mgr    *taskactions.Manager
	ex     *Controller
	out    string
	cancel context.CancelFunc
	done   chan struct{}
	ran    error // what Run returned, once done is closed
}

func startEnv(t *testing.T, out string, mutate ...func(*Config)) *env {
	t.Helper()
	client, err := versioned.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	mgr := taskactions.New(taskactions.Config{Client: client, Log: testenv.Logger(), Finalizers: func(string) []string {
		return []string{v1.FinalizerPlugin}
	}})
	if err := mgr.StartWatching(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Manager: mgr, TaskTypes: "*", OutputRoot: out, Log: testenv.Logger(), MaxSystemFailures: 2,
		Plugins: map[string]plugins.Plugin{"echo": echo.Plugin{}, "sleep": sleep.Plugin{}, "process": process.New(fmt.Sprint(time.Now().UnixNano()), logs.New(out, 0))},
	}
	for _, f := range mutate {
		f(&cfg)
	}
	e := &env{mgr: mgr, ex: New(cfg), out: out, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { defer close(e.done); e.ran = e.ex.Run(ctx) }()
	t.Cleanup(func() {
		e.stop()
		if e.ran != nil {
			t.Errorf("the executor: %v", e.ran)
		}
	})
	return e
}

func (e *env) stop() {
	e.cancel()
	<-e.done
	e.mgr.StopWatching()
}

var runSeq atomic.Int64

func newRun() v1.RunID {
	n := runSeq.Add(1)
	return v1.RunID{Project: fmt.Sprintf("x%d", n), Domain: "dev", Run: fmt.Sprintf("r%d", n)}
}

func id(r v1.RunID, name string) taskactions.ActionID {
	return taskactions.ActionID{Project: r.Project, Domain: r.Domain, Run: r.Run, Name: name}
}

func enqueue(t *testing.T, e *env, aid taskactions.ActionID, template string, cacheKey string) {
	t.Helper()
	var tmpl struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(template), &tmpl)
	_, _, err := e.mgr.Enqueue(context.Background(), taskactions.EnqueueRequest{
		ID: aid, TaskType: tmpl.Type, TaskTemplate: []byte(template), CacheKey: cacheKey, InputURI: "file:///in/" + aid.Name,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// await polls the action until cond holds.
func await(t *testing.T, e *env, aid taskactions.ActionID, timeout time.Duration, what string, cond func(*v1.TaskAction) bool) *v1.TaskAction {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ta, err := e.mgr.GetTaskAction(context.Background(), aid)
		if err == nil && cond(ta) {
			return ta
		}
		if time.Now().After(deadline) {
			if ta != nil {
				b, _ := json.MarshalIndent(ta.Status, "", " ")
				t.Fatalf("%s: timed out waiting for %s; status:\n%s", aid.Name, what, b)
			}
			t.Fatalf("%s: timed out waiting for %s: %v", aid.Name, what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func phaseIs(p v1.Phase) func(*v1.TaskAction) bool {
	return func(ta *v1.TaskAction) bool { return v1.PhaseOf(ta.Status.Conditions) == p }
}

// finished: terminal and the finalizer released.
func finished(ta *v1.TaskAction) bool {
	return v1.PhaseOf(ta.Status.Conditions).Terminal() && !slices.Contains(ta.Finalizers, v1.FinalizerPlugin)
}

func history(ta *v1.TaskAction) string {
	v := taskactions.ViewOf(ta)
	var out []string
	for _, h := range v.PhaseHistory {
		out = append(out, string(h.Phase))
	}
	return strings.Join(out, " ")
}

func TestEchoSucceeds(t *testing.T) {
	e := startEnv(t, t.TempDir())
	run := newRun()
	enqueue(t, e, id(run, "a0"), `{"type":"echo"}`, "")
	ta := await(t, e, id(run, "a0"), 20*time.Second, "SUCCEEDED", finished)
	if got := history(ta); got != "QUEUED INITIALIZING RUNNING SUCCEEDED" {
		t.Errorf("history %q", got)
	}
	s := ta.Status
	if s.Attempts != 1 || s.CacheStatus != v1.CacheDisabled || !strings.HasPrefix(s.PluginPhase, "Success") {
		t.Errorf("status: attempts %d cache %s plugin phase %q", s.Attempts, s.CacheStatus, s.PluginPhase)
	}
	var sent struct{ Phase v1.Phase }
	if err := json.Unmarshal([]byte(s.StateJSON), &sent); err != nil || sent.Phase != v1.PhaseSucceeded {
		t.Errorf("stateJson %q", s.StateJSON)
	}
	out, err := os.ReadFile(filepath.Join(e.out, run.Project, run.Domain, run.Run, "a0", "outputs.json"))
	if err != nil || !strings.Contains(string(out), "file:///in/a0") {
		t.Errorf("echo outputs %q (%v), want the inputs", out, err)
	}
}

func TestFailingProcessRetriesThenFails(t *testing.T) {
	e := startEnv(t, t.TempDir())
	run := newRun()
	enqueue(t, e, id(run, "p"), `{"type":"process","metadata":{"retries":2},"container":{"command":["sh","-c","echo out; echo err >&2; exit 7"]}}`, "")
	ta := await(t, e, id(run, "p"), 30*time.Second, "FAILED", finished)
	s := ta.Status
	if v1.PhaseOf(s.Conditions) != v1.PhaseFailed || s.Attempts != 3 {
		t.Fatalf("phase %s attempts %d, want FAILED after 3 attempts", v1.PhaseOf(s.Conditions), s.Attempts)
	}
	if s.ErrorState == nil || s.ErrorState.Kind != v1.ErrorKindUser || s.ErrorState.Code != "7" {
		t.Errorf("error state %+v, want USER with exit code 7", s.ErrorState)
	}
	// Retries go back to the queue, as Flyte records them: FAILED, a
	// terminal phase, comes once, at the end.
	if h := history(ta); h != "QUEUED INITIALIZING RUNNING QUEUED INITIALIZING RUNNING QUEUED INITIALIZING RUNNING FAILED" {
		t.Errorf("history %q", h)
	}
	dir := filepath.Join(e.out, run.Project, run.Domain, run.Run, "p")
	for a := 1; a <= 3; a++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("stderr-%d.log", a)))
		if err != nil || string(b) != "err\n" {
			t.Errorf("stderr of attempt %d: %q %v", a, b, err)
		}
	}
}

func TestAbortKillsTheProcessGroup(t *testing.T) {
	e := startEnv(t, t.TempDir())
	run := newRun()
	// The shell starts a grandchild and waits: both must die.
	enqueue(t, e, id(run, "p"), `{"type":"process","container":{"command":["sh","-c","sleep 300 & echo $! > child.pid; wait"]}}`, "")
	await(t, e, id(run, "p"), 20*time.Second, "RUNNING", phaseIs(v1.PhaseRunning))
	pidFile := filepath.Join(e.out, run.Project, run.Domain, run.Run, "p", "child.pid")
	var child int
	deadline := time.Now().Add(10 * time.Second)
	for child == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(pidFile)
		child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(20 * time.Millisecond)
	}
	if child == 0 || syscall.Kill(child, 0) != nil {
		t.Fatalf("the grandchild did not start (pid %d)", child)
	}
	if _, err := e.mgr.AbortAction(context.Background(), id(run, "p"), "stop it"); err != nil {
		t.Fatal(err)
	}
	// An abort deletes the object (as Flyte's does); the executor's
	// finalizer holds it until the process group is stopped.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := e.mgr.GetTaskAction(context.Background(), id(run, "p"))
		if errors.Is(err, taskactions.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the aborted action's object is still there: %v", err)
		}
	}
	deadline = time.Now().Add(5 * time.Second)
	for !processGone(child) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still runs after the abort", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var processGone = testenv.ProcessGone

func TestTimeout(t *testing.T) {
	e := startEnv(t, t.TempDir())
	run := newRun()
	enqueue(t, e, id(run, "p"), `{"type":"process","metadata":{"timeout":"300ms","retries":3},"container":{"command":["sleep","300"]}}`, "")
	ta := await(t, e, id(run, "p"), 20*time.Second, "TIMED_OUT", finished)
	if p := v1.PhaseOf(ta.Status.Conditions); p != v1.PhaseTimedOut {
		t.Fatalf("phase %s, want TIMED_OUT", p)
	}
	var st process.State
	tc := (&plugins.TaskContext{}).WithState(ta.Status.PluginStateVersion, ta.Status.PluginState)
	if _, ok, _ := tc.LoadState(&st); !ok || !processGone(st.PID) {
		t.Fatalf("the timed-out process (pid %d) still runs", st.PID)
	}
}

// broken is a plugin whose every round errs.
type broken struct{ rounds atomic.Int32 }

func (b *broken) Handle(context.Context, *plugins.TaskContext) (plugins.Transition, error) {
	b.rounds.Add(1)
	return plugins.Transition{}, errors.New("backend unavailable")
}
func (*broken) Abort(context.Context, *plugins.TaskContext) error    { return nil }
func (*broken) Finalize(context.Context, *plugins.TaskContext) error { return nil }

func TestPluginErrorsExhaustSystemFailures(t *testing.T) {
	b := &broken{}
	e := startEnv(t, t.TempDir(), func(c *Config) { c.Plugins["broken"] = b })
	run := newRun()
	enqueue(t, e, id(run, "b"), `{"type":"broken"}`, "")
	ta := await(t, e, id(run, "b"), 30*time.Second, "FAILED", finished)
	s := ta.Status
	// MaxSystemFailures is 2 here: the third failure is one too many.
	if v1.PhaseOf(s.Conditions) != v1.PhaseFailed || s.SystemFailures != 3 || b.rounds.Load() != 3 {
		t.Fatalf("phase %s system failures %d rounds %d", v1.PhaseOf(s.Conditions), s.SystemFailures, b.rounds.Load())
	}
	if s.ErrorState == nil || s.ErrorState.Kind != v1.ErrorKindSystem {
		t.Errorf("error state %+v, want SYSTEM", s.ErrorState)
	}
}

func TestCacheHit(t *testing.T) {
	e := startEnv(t, t.TempDir())
	run := newRun()
	counter := filepath.Join(t.TempDir(), "runs")
	tmpl := fmt.Sprintf(`{"type":"process","metadata":{"cacheable":true,"cacheVersion":"v1"},"container":{"command":["sh","-c","echo run >> %s; echo '{\"answer\":42}' > outputs.json"]}}`, counter)
	enqueue(t, e, id(run, "first"), tmpl, "answer")
	first := await(t, e, id(run, "first"), 20*time.Second, "SUCCEEDED", finished)
	if first.Status.CacheStatus != v1.CachePopulated {
		t.Errorf("first: cache %s, want POPULATED", first.Status.CacheStatus)
	}
	enqueue(t, e, id(run, "second"), tmpl, "answer")
	second := await(t, e, id(run, "second"), 20*time.Second, "SUCCEEDED", finished)
	if second.Status.CacheStatus != v1.CacheHit || v1.PhaseOf(second.Status.Conditions) != v1.PhaseSucceeded {
		t.Errorf("second: cache %s phase %s, want a HIT", second.Status.CacheStatus, v1.PhaseOf(second.Status.Conditions))
	}
	if b, _ := os.ReadFile(counter); strings.Count(string(b), "run") != 1 {
		t.Errorf("the command ran %d times, want once", strings.Count(string(b), "run"))
	}
	out, err := os.ReadFile(filepath.Join(e.out, run.Project, run.Domain, run.Run, "second", "outputs.json"))
	if err != nil || !strings.Contains(string(out), "42") {
		t.Errorf("the hit's outputs %q %v, want the first one's", out, err)
	}
	// Another cache version misses.
	enqueue(t, e, id(run, "third"), strings.Replace(tmpl, `"v1"`, `"v2"`, 1), "answer")
	third := await(t, e, id(run, "third"), 20*time.Second, "SUCCEEDED", finished)
	if third.Status.CacheStatus != v1.CachePopulated {
		t.Errorf("other version: cache %s, want POPULATED after a miss", third.Status.CacheStatus)
	}
}

func TestUnknownTypeAndInvalidSpec(t *testing.T) {
	// A type claimed by name that no plugin runs fails; "*" alone would
	// not claim it.
	e := startEnv(t, t.TempDir(), func(c *Config) { c.TaskTypes = "*,quantum" })
	run := newRun()
	enqueue(t, e, id(run, "u"), `{"type":"quantum"}`, "")
	enqueue(t, e, id(run, "i"), `{"type":"echo","metadata":{"timeout":"soon"}}`, "")
	for name, reason := range map[string]string{"u": v1.ReasonPluginNotFound, "i": v1.ReasonInvalidSpec} {
		ta := await(t, e, id(run, name), 20*time.Second, "FAILED", finished)
		if c := ta.Status.Conditions; v1.PhaseOf(c) != v1.PhaseFailed || !hasReason(c, reason) {
			t.Errorf("%s: %s without reason %s", name, v1.PhaseOf(c), reason)
		}
	}
}

func hasReason(conds []metav1.Condition, reason string) bool {
	for _, c := range conds {
		if c.Type == v1.ConditionFailed && c.Reason == reason {
			return true
		}
	}
	return false
}

func TestRestartResumesSleep(t *testing.T) {
	out := t.TempDir()
	e := startEnv(t, out)
	run := newRun()
	enqueue(t, e, id(run, "s"), `{"type":"sleep","custom":{"duration":"2s"}}`, "")
	await(t, e, id(run, "s"), 20*time.Second, "RUNNING", phaseIs(v1.PhaseRunning))
	e.stop()
	e2 := startEnv(t, out)
	ta := await(t, e2, id(run, "s"), 20*time.Second, "SUCCEEDED", finished)
	if got := history(ta); got != "QUEUED INITIALIZING RUNNING SUCCEEDED" || ta.Status.Attempts != 1 || ta.Status.SystemFailures != 0 {
		t.Errorf("after a restart: history %q attempts %d system failures %d, want the same attempt finished",
			got, ta.Status.Attempts, ta.Status.SystemFailures)
	}
}

// A server stop interrupts a running process: it dies with the stop, and
// the next server starts the same attempt again, counting no failure.
func TestStopInterruptsWithoutFailure(t *testing.T) {
	out := t.TempDir()
	e := startEnv(t, out)
	run := newRun()
	// The first run leaves a marker and hangs; the second finds it and
	// succeeds.
	enqueue(t, e, id(run, "p"), `{"type":"process","container":{"command":["sh","-c","if [ -f marker ]; then echo second; exit 0; fi; touch marker; echo $$ > first.pid; echo first; sleep 300"]}}`, "")
	await(t, e, id(run, "p"), 20*time.Second, "RUNNING", phaseIs(v1.PhaseRunning))
	dir := filepath.Join(out, run.Project, run.Domain, run.Run, "p")
	first := readPID(t, filepath.Join(dir, "first.pid"))
	e.stop() // a server stop kills what its executor runs
	if !processGone(first) {
		t.Fatalf("the first run's process %d outlived the server", first)
	}
	e2 := startEnv(t, out)
	ta := await(t, e2, id(run, "p"), 20*time.Second, "SUCCEEDED", finished)
	s := ta.Status
	if v1.PhaseOf(s.Conditions) != v1.PhaseSucceeded || s.Attempts != 1 || s.SystemFailures != 0 {
		t.Errorf("phase %s attempts %d system failures %d, want SUCCEEDED in attempt 1 with no failure",
			v1.PhaseOf(s.Conditions), s.Attempts, s.SystemFailures)
	}
	if !strings.Contains(history(ta), "RUNNING QUEUED INITIALIZING RUNNING SUCCEEDED") {
		t.Errorf("history %q should show the interruption", history(ta))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "stdout-1.log")); string(b) != "first\nsecond\n" {
		t.Errorf("stdout-1.log %q, want both runs' output", b)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// A server process that recorded an attempt as starting, then died, left
// no pid. The next server kills whatever carries the attempt's marker and
// counts the attempt lost: it never runs it again, but a new one.
func TestAttemptRecordedByADeadServerIsNeverRerun(t *testing.T) {
	out := t.TempDir()
	mgr := startManager(t)
	run := newRun()
	counter := filepath.Join(t.TempDir(), "runs")
	aid := id(run, "p")
	_, _, err := mgr.Enqueue(context.Background(), taskactions.EnqueueRequest{ID: aid, TaskType: "process",
		TaskTemplate: []byte(fmt.Sprintf(`{"type":"process","container":{"command":["sh","-c","echo $TASKACTIONS_ATTEMPT >> %s"]}}`, counter))})
	if err != nil {
		t.Fatal(err)
	}
	// What the dead server left: attempt 1 INITIALIZING, a marker, no pid;
	// and a process of that attempt that somehow outlived it.
	state, _ := plugins.EncodeState(process.State{Marker: "m-dead-server", Instance: "dead"})
	if _, err := mgr.UpdateStatus(context.Background(), aid, func(t *v1.TaskAction) error {
		t.Status.Attempts, t.Status.PluginState, t.Status.PluginStateVersion = 1, state, 2
		setPhase(t, v1.PhaseInitializing, v1.ReasonInitializing, "", false)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command("sleep", "300")
	orphan.Env = append(os.Environ(), "TASKACTIONS_ATTEMPT_MARKER=m-dead-server")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = orphan.Wait() }()
	mgr.StopWatching()

	e := startEnv(t, out)
	ta := await(t, e, aid, 20*time.Second, "SUCCEEDED", finished)
	if s := ta.Status; s.Attempts != 2 || s.SystemFailures != 1 {
		t.Errorf("attempts %d system failures %d, want attempt 2 after 1 system failure", s.Attempts, s.SystemFailures)
	}
	if b, _ := os.ReadFile(counter); string(b) != "2\n" {
		t.Errorf("attempts that ran: %q, want only attempt 2", b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !processGone(orphan.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the marked orphan %d still runs", orphan.Process.Pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
