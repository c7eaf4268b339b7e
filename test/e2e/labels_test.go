package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
)

// This server's own action: a root named as its run is stored as
// <run>-a0, the name Flyte's GetTaskAction looks for; once finished it
// carries this server's terminal label, never Flyte's.
func TestOwnActionsAsFlyteNamesThemAndOurOwnLabel(t *testing.T) {
	ctx := context.Background()
	run := newRun()
	resp, err := srv.api.EnqueueActionWithResponse(ctx, actionSpec(run, run.Name, "", "echo"))
	if err != nil || resp.JSON201 == nil {
		t.Fatalf("enqueue: %v %s", err, resp.Body)
	}
	ns := srv.app.Manager().Namespace(run.Project, run.Domain)
	kc := kubeOf(t, srv).FlyteV1().TaskActions(ns)
	var ta *v1.TaskAction
	eventually(t, 20*time.Second, "the echo root finished and recorded", func() bool {
		ta, err = kc.Get(ctx, run.Name+"-a0", metav1.GetOptions{})
		return err == nil && ta.Labels[v1.LabelTerminalState] == "true"
	})
	if ta.Spec.ActionName != run.Name || ta.Status.Phase != v1.PhaseSucceeded {
		t.Errorf("%s: action %s, %s", ta.Name, ta.Spec.ActionName, ta.Status.Phase)
	}
	if _, ok := ta.Labels[v1.LabelFlyteTerminalState]; ok {
		t.Errorf("this server set Flyte's label %s", v1.LabelFlyteTerminalState)
	}
}
