package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/taskactions"
	"taskactions/internal/testenv"
)

// An action stored by someone else too big to take a status for its whole
// life fails at once, and its command never runs.
func TestOversizedActionFailsWithoutRunning(t *testing.T) {
	e := startEnv(t, t.TempDir())
	run := newRun()
	ran := filepath.Join(t.TempDir(), "ran")
	tmpl := fmt.Sprintf(`{"type":"process","container":{"command":["touch",%q]},"custom":{"pad":%q}}`, ran, strings.Repeat("x", 800<<10))
	create(t, e, run, "big", tmpl)
	got := await(t, e, id(run, "big"), 20*time.Second, "FAILED", finished)
	if s := got.Status; v1.PhaseOf(s.Conditions) != v1.PhaseFailed || s.ErrorState == nil || s.ErrorState.Code != "ObjectTooLarge" {
		t.Fatalf("phase %s error %+v, want FAILED with ObjectTooLarge", v1.PhaseOf(s.Conditions), s.ErrorState)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command of an oversized action ran")
	}
}

// startManager is a manager alone (no executor), for setting up state.
func startManager(t *testing.T) *taskactions.Manager {
	t.Helper()
	client, err := versioned.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	mgr := taskactions.New(taskactions.Config{Client: client, Log: testenv.Logger()})
	if err := mgr.StartWatching(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mgr.StopWatching)
	return mgr
}

// What is not this executor's it leaves alone, never writing a failure
// into it: a type it has no plugin for ("*" claims only its plugins'), a
// template it cannot read (Flyte's protobuf), a condition action, an
// action another executor's finalizer marks.
func TestLeavesOthersActionsAlone(t *testing.T) {
	e := startEnv(t, t.TempDir())
	run := newRun()
	client, err := versioned.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := e.mgr.Namespace(run.Project, run.Domain)
	mk := func(name string, edit func(*v1.TaskAction)) {
		ta := &v1.TaskAction{
			ObjectMeta: metav1.ObjectMeta{Name: run.Run + "-" + name, Namespace: ns},
			Spec:       v1.TaskActionSpec{RunName: run.Run, Project: run.Project, Domain: run.Domain, ActionName: name, TaskType: "echo"},
		}
		edit(ta)
		if _, err := client.FlyteV1().TaskActions(ns).Create(context.Background(), ta, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("python", func(ta *v1.TaskAction) { ta.Spec.TaskType = "python" })
	mk("proto", func(ta *v1.TaskAction) { ta.Spec.TaskTemplate = []byte{0x12, 0x06, 'p', 'y', 't', 'h', 'o', 'n'} })
	mk("cond", func(ta *v1.TaskAction) { ta.Spec.TaskType, ta.Spec.ActionType = "", v1.ActionTypeCondition })
	mk("owned", func(ta *v1.TaskAction) { ta.Finalizers = []string{"flyte.org/other-executor"} })
	mk("mine", func(*v1.TaskAction) {}) // the control: an echo action it runs
	await(t, e, id(run, "mine"), 20*time.Second, "SUCCEEDED", finished)
	time.Sleep(time.Second) // the others had their chance
	for _, name := range []string{"python", "proto", "cond", "owned"} {
		ta, err := e.mgr.GetTaskAction(context.Background(), id(run, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(ta.Status.Conditions) != 0 || ta.Status.Attempts != 0 || slices.Contains(ta.Finalizers, v1.FinalizerPlugin) {
			t.Errorf("%s was touched: finalizers %v, status %+v", name, ta.Finalizers, ta.Status)
		}
	}
}

// A server hands its start's garbage back once the executor has been
// through the actions it found at start: Drained tells it when. Not while
// actions wait for a worker, nor before it runs.
func TestDrained(t *testing.T) {
	if New(Config{TaskTypes: "*"}).Drained() {
		t.Fatal("an executor that has not run reports itself drained")
	}
	g := gate{entered: make(chan struct{}, 8), release: make(chan struct{})}
	e := startEnv(t, t.TempDir(), func(c *Config) {
		c.Workers = 1
		c.Plugins = map[string]plugins.Plugin{"gate": g}
	})
	run := newRun()
	for _, name := range []string{"a0", "a1", "a2"} {
		enqueue(t, e, id(run, name), `{"type":"gate"}`, "")
	}
	<-g.entered // the one worker is held; the other two wait for it
	deadline := time.Now().Add(20 * time.Second)
	for e.ex.run.Load().queue.Len() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the other actions never queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if e.ex.Drained() {
		t.Error("drained with two actions waiting for the worker")
	}
	close(g.release)
	for !e.ex.Drained() {
		if time.Now().After(deadline) {
			t.Fatal("not drained 20 s after the worker was let go")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gate is a plugin whose rounds wait until release is closed.
type gate struct{ entered, release chan struct{} }

func (g gate) Handle(ctx context.Context, _ *plugins.TaskContext) (plugins.Transition, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.release:
		return plugins.Transition{Phase: plugins.PhaseSuccess}, nil
	case <-ctx.Done():
		return plugins.Transition{}, ctx.Err()
	}
}

func (gate) Abort(context.Context, *plugins.TaskContext) error    { return nil }
func (gate) Finalize(context.Context, *plugins.TaskContext) error { return nil }
