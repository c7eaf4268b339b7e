package taskactions

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "taskactions/api/v1"
)

func TestEnqueueIdempotentConflictAndMissingParent(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	root := echoRequest(actionOf(run, "a0"), "")

	first, created, err := m.Enqueue(ctx, root)
	if err != nil || !created {
		t.Fatalf("first enqueue: created=%v err=%v", created, err)
	}
	again, created, err := m.Enqueue(ctx, root)
	if err != nil || created {
		t.Fatalf("same request again: created=%v err=%v, want existing object and no error", created, err)
	}
	if again.UID != first.UID {
		t.Errorf("same request again returned another object")
	}
	// The same template with its keys in another order is the same spec.
	reordered := root
	reordered.TaskTemplate = []byte(`{ "type" : "echo" }`)
	if _, _, err := m.Enqueue(ctx, reordered); err != nil {
		t.Errorf("same template, other spacing: %v", err)
	}

	tests := []struct {
		name string
		req  func() EnqueueRequest
		want error
	}{
		{"same id, other task type", func() EnqueueRequest { r := root; r.TaskType = "sleep"; return r }, ErrConflict},
		{"same id, other template", func() EnqueueRequest { r := root; r.TaskTemplate = []byte(`{"type":"x"}`); return r }, ErrConflict},
		{"child of a missing parent", func() EnqueueRequest { return echoRequest(actionOf(run, "c1"), "nope") }, ErrNotFound},
		{"parent of the same name in another run", func() EnqueueRequest {
			other := newRun()
			return echoRequest(ActionID{run.Project, run.Domain, other.Run, "c1"}, "a0")
		}, ErrNotFound},
		{"template that is not JSON", func() EnqueueRequest {
			r := echoRequest(actionOf(run, "bad"), "")
			r.TaskTemplate = []byte(`{`)
			return r
		}, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := m.Enqueue(ctx, tc.req())
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestEnqueueBuildsObjectAndChildInherits(t *testing.T) {
	m := newManager(t, nil)
	run := newRun()
	yes := true
	root := echoRequest(actionOf(run, "a0"), "")
	root.RunSpec = &RunSpec{
		Labels:        map[string]string{"team": "ml"},
		Annotations:   map[string]string{"note": "hello"},
		Envs:          map[string]string{"A": "1", "B": "2"},
		Interruptible: &yes,
	}
	root.MayExecute = true
	parent := mustEnqueue(t, m, root)
	if parent.Annotations[v1.AnnotationMayExecute] != "true" {
		t.Errorf("root annotations %v: want the enqueuer's execute recorded", parent.Annotations)
	}
	if parent.Name != run.Run+"-a0" || parent.Namespace != run.Project+"-dev" {
		t.Errorf("name %s/%s, want %s-dev/%s-a0", parent.Namespace, parent.Name, run.Project, run.Run)
	}
	wantLabels := map[string]string{
		v1.LabelProject: run.Project, v1.LabelDomain: "dev", v1.LabelRun: run.Run, v1.LabelAction: "a0",
		v1.LabelIsRoot: "true", v1.LabelActionType: "echo", "team": "ml",
	}
	for k, v := range wantLabels {
		if parent.Labels[k] != v {
			t.Errorf("root label %s = %q, want %q", k, parent.Labels[k], v)
		}
	}

	childReq := echoRequest(actionOf(run, "c1"), "a0")
	childReq.RunSpec = &RunSpec{Envs: map[string]string{"B": "child"}}
	child := mustEnqueue(t, m, childReq)
	if child.Labels["team"] != "ml" || child.Labels[v1.LabelParent] != "a0" || child.Labels[v1.LabelIsRoot] != "false" || child.Labels[v1.LabelAction] != "c1" {
		t.Errorf("child labels %v", child.Labels)
	}
	if child.Annotations["note"] != "hello" {
		t.Errorf("child annotations %v, want the parent's", child.Annotations)
	}
	if _, ok := child.Annotations[v1.AnnotationMayExecute]; ok {
		t.Errorf("child annotations %v: execute is its enqueuer's, not inherited", child.Annotations)
	}
	if child.Spec.EnvVars["A"] != "1" || child.Spec.EnvVars["B"] != "child" {
		t.Errorf("child env %v, want A from the parent and B overridden", child.Spec.EnvVars)
	}
	if child.Spec.Interruptible == nil || !*child.Spec.Interruptible {
		t.Errorf("child interruptible %v, want inherited true", child.Spec.Interruptible)
	}
	if len(child.OwnerReferences) != 1 || child.OwnerReferences[0].UID != parent.UID {
		t.Errorf("child owner references %v, want the parent", child.OwnerReferences)
	}
	if child.Spec.ParentActionName == nil || *child.Spec.ParentActionName != "a0" {
		t.Errorf("child parentActionName %v", child.Spec.ParentActionName)
	}
}

func TestReadsServeFromCacheRightAfterWrites(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	mustEnqueue(t, m, echoRequest(actionOf(run, "a0"), ""))
	for _, n := range []string{"c1", "c2", "c3"} {
		mustEnqueue(t, m, echoRequest(actionOf(run, n), "a0"))
	}
	mustEnqueue(t, m, echoRequest(actionOf(run, "g1"), "c1"))

	all, err := m.ListRunActions(ctx, run)
	if err != nil || len(all) != 5 {
		t.Fatalf("ListRunActions: %d actions, err %v; want 5", len(all), err)
	}
	children, err := listChildren(ctx, m, actionOf(run, "a0"))
	if err != nil || len(children) != 3 {
		t.Fatalf("ListChildActions: %d, err %v; want the 3 direct children", len(children), err)
	}
	got, err := m.GetTaskAction(ctx, actionOf(run, "g1"))
	if err != nil || *got.Spec.ParentActionName != "c1" {
		t.Fatalf("GetTaskAction: %v %v", got, err)
	}
	if _, err := m.GetTaskAction(ctx, actionOf(run, "zz")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetTaskAction of a missing action: %v, want ErrNotFound", err)
	}
}

func TestFitShortName(t *testing.T) {
	long := strings.Repeat("a", 70)
	if got := FitShortName(long); got != long[:63] {
		t.Errorf("FitShortName of 70 bytes is %d bytes", len(got))
	}
	if got := FitShortName("clone"); got != "clone" {
		t.Errorf("FitShortName(clone) = %q", got)
	}
}
