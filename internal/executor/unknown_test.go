package executor

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/kube/clientset/versioned"
)

// With no executor outside, an action of a type nothing here runs fails
// at once, as Flyte's executor fails a type it has no plugin for
// (PluginNotFound), saying which types this server runs; Flyte's own
// actions (a protobuf template) stay untouched: they are Flyte's to run;
// so do those of a type the server's own controllers report (Reported).
func TestUnknownTypeFailsWithNoExecutorOutside(t *testing.T) {
	e := startEnv(t, t.TempDir(), func(c *Config) { c.NoOutside = true; c.Reported = []string{"reported-root"} })
	run := newRun()
	enqueue(t, e, id(run, "root"), `{"type":"reported-root"}`, "") // reported by a controller of the server
	enqueue(t, e, id(run, "typo"), `{"type":"ehco"}`, "")
	ta := await(t, e, id(run, "typo"), 20*time.Second, "FAILED", phaseIs(v1.PhaseFailed))
	c := meta.FindStatusCondition(ta.Status.Conditions, v1.ConditionFailed)
	if c == nil || c.Reason != v1.ReasonPluginNotFound || ta.Status.ErrorState == nil || ta.Status.ErrorState.Code != "PluginNotFound" {
		t.Fatalf("failed with %+v, error %+v", c, ta.Status.ErrorState)
	}
	if want := `no executor of this server runs task type "ehco": it runs echo, process, sleep`; !strings.HasPrefix(c.Message, want) {
		t.Errorf("message %q, want it to start %q", c.Message, want)
	}

	client, err := versioned.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := e.mgr.Namespace(run.Project, run.Domain)
	flytes := &v1.TaskAction{
		ObjectMeta: metav1.ObjectMeta{Name: run.Run + "-py", Namespace: ns},
		Spec: v1.TaskActionSpec{RunName: run.Run, Project: run.Project, Domain: run.Domain, ActionName: "py",
			TaskType: "python", TaskTemplate: []byte{0x12, 0x06, 'p', 'y', 't', 'h', 'o', 'n'}},
	}
	if _, err := client.FlyteV1().TaskActions(ns).Create(context.Background(), flytes, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, e, id(run, "mine"), `{"type":"echo"}`, "") // the control, after it
	await(t, e, id(run, "mine"), 20*time.Second, "SUCCEEDED", finished)
	time.Sleep(time.Second) // Flyte's and the reported root had their chance
	got, err := e.mgr.GetTaskAction(context.Background(), id(run, "py"))
	if err != nil || len(got.Status.Conditions) != 0 {
		t.Errorf("Flyte's action was touched: %+v %v", got.Status, err)
	}
	if root, err := e.mgr.GetTaskAction(context.Background(), id(run, "root")); err != nil || v1.PhaseOf(root.Status.Conditions) != v1.PhaseQueued {
		t.Errorf("the reported root was touched: %+v %v", root.Status.Conditions, err)
	}
}

func TestPending(t *testing.T) {
	runs := []string{"echo", "sleep"}
	if got := Pending(runs, "echo"); got != "" {
		t.Errorf("a type run here: %q", got)
	}
	if got, want := Pending(runs, "spark"), `no executor of this server runs task type "spark" (it runs echo, sleep)`; !strings.HasPrefix(got, want) {
		t.Errorf("%q, want it to start %q", got, want)
	}
	if got := Pending(nil, "spark"); !strings.Contains(got, "(it runs none)") {
		t.Errorf("no types: %q", got)
	}
}
