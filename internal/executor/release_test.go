package executor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins/process"
	"taskactions/internal/kube/clientset/versioned"
)

// swept is the process plugin as a server with cgroups or a subreaper
// runs it: its actions carry no finalizer.
type swept struct{ *process.Plugin }

func (swept) SweptAtStart() bool { return true }

func startSweptEnv(t *testing.T) *env {
	t.Helper()
	return startEnv(t, t.TempDir(), func(c *Config) { c.Plugins["process"] = swept{c.Plugins["process"].(*process.Plugin)} })
}

// create stores a process action of the template as it is, through
// client-go: without the finalizer, as a server whose process plugin is
// swept at start stores it.
func create(t *testing.T, e *env, run v1.RunID, name, tmpl string) {
	t.Helper()
	ta := &v1.TaskAction{
		ObjectMeta: metav1.ObjectMeta{Name: run.Run + "-" + name, Namespace: e.mgr.Namespace(run.Project, run.Domain)},
		Spec: v1.TaskActionSpec{RunName: run.Run, Project: run.Project, Domain: run.Domain, ActionName: name,
			TaskType: "process", TaskTemplate: []byte(tmpl)},
	}
	client, err := versioned.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.FlyteV1().TaskActions(ta.Namespace).Create(context.Background(), ta, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// sh is a process template that runs script with sh -c.
func sh(script string) string {
	b, _ := json.Marshal(script)
	return `{"type":"process","container":{"command":["sh","-c",` + string(b) + `]}}`
}

// An action without the finalizer, aborted while its command runs, is
// gone at once, and its command (a grandchild included) is killed all the
// same. Another action under its name runs after.
func TestAbortWithoutFinalizerKillsTheProcessGroup(t *testing.T) {
	e := startSweptEnv(t)
	run := newRun()
	create(t, e, run, "p", sh("sleep 300 & echo $! > child.pid; wait"))
	ta := await(t, e, id(run, "p"), 20*time.Second, "RUNNING", phaseIs(v1.PhaseRunning))
	if len(ta.Finalizers) != 0 {
		t.Fatalf("finalizers %v, want none", ta.Finalizers)
	}
	child := readPID(t, filepath.Join(e.out, run.Project, run.Domain, run.Run, "p", "child.pid"))
	if _, err := e.mgr.AbortAction(context.Background(), id(run, "p"), "stop it"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !processGone(child); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still runs after the abort", child)
		}
	}
	create(t, e, run, "p", sh("echo second > second"))
	await(t, e, id(run, "p"), 20*time.Second, "SUCCEEDED", finished)
	if _, err := os.Stat(filepath.Join(e.out, run.Project, run.Domain, run.Run, "p", "second")); err != nil {
		t.Errorf("the action under the same name did not run: %v", err)
	}
}

// An action deleted and stored again under its name before the executor
// saw the deletion: the first one's command is killed before the second's
// runs.
func TestReplacedActionsCommandIsKilled(t *testing.T) {
	e := startSweptEnv(t)
	run := newRun()
	create(t, e, run, "p", sh("sleep 300 & echo $! > child.pid; wait"))
	await(t, e, id(run, "p"), 20*time.Second, "RUNNING", phaseIs(v1.PhaseRunning))
	dir := filepath.Join(e.out, run.Project, run.Domain, run.Run, "p")
	child := readPID(t, filepath.Join(dir, "child.pid"))
	client, err := versioned.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := e.mgr.Namespace(run.Project, run.Domain)
	if err := client.FlyteV1().TaskActions(ns).Delete(context.Background(), run.Run+"-p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The second finds the first's grandchild gone (or a zombie): killed
	// first.
	create(t, e, run, "p", sh("c=/proc/$(cat child.pid)/stat; if [ -e $c ] && ! grep -q ') Z ' $c; then echo alive > first; fi"))
	await(t, e, id(run, "p"), 20*time.Second, "SUCCEEDED", finished)
	if b, err := os.ReadFile(filepath.Join(dir, "first")); err == nil {
		t.Errorf("the replaced action's grandchild was %s when the new one ran", b)
	}
	if !processGone(child) {
		t.Errorf("grandchild %d of the replaced action still runs", child)
	}
}
