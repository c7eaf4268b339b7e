package taskactions

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
)

// Actions are found by their spec's identity, however their objects are
// named and wherever they live: Flyte puts every project in namespace
// "flyte" and names a run's root <run>-a0, though the root's action name
// is the run's.
func TestFlyteNamedObjectsAreFoundByID(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	root := &v1.TaskAction{
		ObjectMeta: metav1.ObjectMeta{Name: run.Run + "-a0", Namespace: "flyte"},
		Spec: v1.TaskActionSpec{RunName: run.Run, Project: run.Project, Domain: run.Domain, ActionName: run.Run,
			TaskType: "python", TaskTemplate: []byte{0x12, 0x06, 'p', 'y', 't', 'h', 'o', 'n'}},
	}
	if _, err := kubeClient(t).FlyteV1().TaskActions("flyte").Create(ctx, root, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rootID := actionOf(run, run.Run)
	eventually(t, 10*time.Second, "the cache to have it", func() bool { ta, _ := m.GetTaskAction(ctx, rootID); return ta != nil })

	// A child through the manager goes with its parent, into "flyte".
	child := mustEnqueue(t, m, echoRequest(actionOf(run, "n0"), run.Run))
	if child.Namespace != "flyte" || child.OwnerReferences[0].Name != root.Name {
		t.Errorf("child in %s owned by %v, want namespace flyte and owner %s", child.Namespace, child.OwnerReferences, root.Name)
	}
	kids, err := listChildren(ctx, m, rootID)
	if err != nil || len(kids) != 1 || kids[0].Spec.ActionName != "n0" {
		t.Errorf("children of the Flyte root: %v %v", kids, err)
	}
	if _, err := m.PutStatus(ctx, actionOf(run, "n0"), 1, StatusUpdate{Phase: v1.PhaseRunning}); err != nil {
		t.Errorf("status of the child: %v", err)
	}
	if _, err := m.AbortAction(ctx, rootID, "through its id"); err != nil {
		t.Errorf("abort of the Flyte root: %v", err)
	}
}

// "col"+"x-y" and "col-x"+"y" both make the natural name col-x-y: the
// second gets another name, and each is itself, idempotently.
func TestCollidingNamesAreKeptApart(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	p := newRun().Project
	first := ActionID{p, "dev", "col-x", "y"}
	second := ActionID{p, "dev", "col", "x-y"}
	a := mustEnqueue(t, m, echoRequest(first, ""))
	b := mustEnqueue(t, m, echoRequest(second, ""))
	if a.Name != "col-x-y" || b.Name == a.Name {
		t.Fatalf("objects %s and %s: the first keeps the natural name, the second another", a.Name, b.Name)
	}
	for _, id := range []ActionID{first, second} {
		ta, created, err := m.Enqueue(ctx, echoRequest(id, ""))
		if err != nil || created || !id.matches(&ta.Spec) {
			t.Errorf("%s again: created %v, %v", id, created, err)
		}
		got, err := m.GetTaskAction(ctx, id)
		if err != nil || !id.matches(&got.Spec) {
			t.Errorf("get %s: %v", id, err)
		}
	}
	other := echoRequest(second, "")
	other.TaskType, other.TaskTemplate = "sleep", []byte(`{"type":"sleep"}`)
	if _, _, err := m.Enqueue(ctx, other); !errors.Is(err, ErrConflict) {
		t.Errorf("the second with another spec: %v, want ErrConflict", err)
	}
}

// With a namespace template without placeholders (Flyte's one namespace),
// every project shares it: the same run and action names in two projects
// are two actions, each found by its id.
func TestOneNamespaceForAllProjects(t *testing.T) {
	m := newManager(t, nil, func(c *Config) { c.NamespaceTemplate = "shared" })
	ctx := context.Background()
	p := newRun().Project
	a := ActionID{p + "-x", "dev", "r1", "a0"}
	b := ActionID{p + "-y", "dev", "r1", "a0"}
	ta := mustEnqueue(t, m, echoRequest(a, ""))
	tb := mustEnqueue(t, m, echoRequest(b, ""))
	if ta.Namespace != "shared" || tb.Namespace != "shared" || ta.Name == tb.Name {
		t.Fatalf("objects %s/%s and %s/%s, want two in namespace shared", ta.Namespace, ta.Name, tb.Namespace, tb.Name)
	}
	for _, id := range []ActionID{a, b} {
		got, err := m.GetTaskAction(ctx, id)
		if err != nil || !id.matches(&got.Spec) {
			t.Errorf("get %s: %v", id, err)
		}
	}
}

// A root named as its run is stored under Flyte's name for it, <run>-a0
// (actions/k8s buildTaskActionName), which Flyte's GetTaskAction looks up;
// a child named a0 then takes another name, and each is itself.
func TestRootNamedAsItsRunIsStoredAsFlyteNamesIt(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	root := mustEnqueue(t, m, echoRequest(actionOf(run, run.Run), ""))
	if root.Name != run.Run+"-a0" {
		t.Errorf("the root is %s, want %s-a0", root.Name, run.Run)
	}
	child := mustEnqueue(t, m, echoRequest(actionOf(run, "a0"), run.Run))
	if child.Name == root.Name {
		t.Fatalf("the child a0 took its root's name")
	}
	for _, id := range []ActionID{actionOf(run, run.Run), actionOf(run, "a0")} {
		if got, err := m.GetTaskAction(ctx, id); err != nil || !id.matches(&got.Spec) {
			t.Errorf("get %s: %v", id, err)
		}
	}
	if other := mustEnqueue(t, m, echoRequest(actionOf(run, "b"), "")); other.Name != run.Run+"-b" {
		t.Errorf("another root: %s", other.Name)
	}
}
