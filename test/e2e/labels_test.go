package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
)

// This server's own action: a root named as its run is stored as
// <run>-a0, the name Flyte's GetTaskAction looks for; once finished and
// in history it carries no bookkeeping label, this server's or Flyte's.
func TestOwnActionsAsFlyteNamesThemAndNoLabel(t *testing.T) {
	ctx := context.Background()
	run := newRun()
	resp, err := srv.api.EnqueueActionWithResponse(ctx, actionSpec(run, run.Name, "", "echo"))
	if err != nil || resp.JSON201 == nil {
		t.Fatalf("enqueue: %v %s", err, resp.Body)
	}
	ns := srv.app.Manager().Namespace(run.Project, run.Domain)
	kc := kubeOf(t, srv).FlyteV1().TaskActions(ns)
	base := "/projects/" + run.Project + "/domains/" + run.Domain + "/runs/" + run.Name
	eventually(t, 20*time.Second, "the echo root finished and in history", func() bool {
		code, b := srv.get(t, base)
		return code == 200 && contains(string(b), `"phase":"SUCCEEDED"`)
	})
	ta, err := kc.Get(ctx, run.Name+"-a0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ta.Spec.ActionName != run.Name || ta.Status.Phase != v1.PhaseSucceeded {
		t.Errorf("%s: action %s, %s", ta.Name, ta.Spec.ActionName, ta.Status.Phase)
	}
	for _, k := range []string{v1.LabelTerminalState, v1.LabelFlyteTerminalState} {
		if _, ok := ta.Labels[k]; ok {
			t.Errorf("this server set the label %s", k)
		}
	}
}
