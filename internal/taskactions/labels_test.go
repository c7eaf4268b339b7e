package taskactions

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
)

// An action Flyte's Actions service marked recorded (its label) still has
// its terminal phase recorded here: the label is Flyte's bookkeeping, not
// this server's, and this server labels its own under its own prefix.
func TestFlytesLabelHidesNoTerminalPhase(t *testing.T) {
	n := newCountingNotifier(t)
	m := newManager(t, n)
	ctx := context.Background()
	run := newRun()
	id := actionOf(run, "a0")
	ta := mustEnqueue(t, m, echoRequest(id, ""))
	mustPut(t, m, id, 1, v1.PhaseRunning)
	// Flyte's Actions service, watching the namespace, recorded the
	// action in its run service and labelled it.
	patch := []byte(`{"metadata":{"labels":{"` + v1.LabelFlyteTerminalState + `":"true"}}}`)
	if _, err := kubeClient(t).FlyteV1().TaskActions(ta.Namespace).Patch(ctx, ta.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, m, id, 1, v1.PhaseSucceeded)
	eventually(t, 10*time.Second, "the terminal phase recorded here, and this server's label", func() bool {
		got, err := kubeClient(t).FlyteV1().TaskActions(ta.Namespace).Get(ctx, ta.Name, metav1.GetOptions{})
		return err == nil && n.terminalCount(id) == 1 && got.Labels[v1.LabelTerminalState] == "true"
	})
	if v1.LabelTerminalState == v1.LabelFlyteTerminalState || !strings.HasPrefix(v1.LabelTerminalState, "taskactions.io/") {
		t.Errorf("this server's label %s", v1.LabelTerminalState)
	}
}

// Actions Flyte enqueued get no label of this server's: their terminal
// phase is recorded, and the object is left as Flyte wrote it.
func TestFlytesActionsAreNotLabelled(t *testing.T) {
	n := newCountingNotifier(t)
	m := newManager(t, n)
	ctx := context.Background()
	run := newRun()
	ta := createFlytes(t, fixtureNamed(t, "succeeded"), run, "done")
	eventually(t, 10*time.Second, "its terminal phase recorded", func() bool { return n.terminalCount(actionOf(run, "done")) == 1 })
	// One more event, handled after the terminal one: had a label been
	// patched, the cache would have it by now.
	before := m.EventsHandled()
	patch := []byte(`{"metadata":{"annotations":{"touched":"yes"}}}`)
	if _, err := kubeClient(t).FlyteV1().TaskActions("flyte").Patch(ctx, ta.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the touch handled", func() bool { return m.EventsHandled() > before && m.QueueDepth() == 0 })
	got, err := kubeClient(t).FlyteV1().TaskActions("flyte").Get(ctx, ta.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range got.Labels {
		if strings.HasPrefix(k, "taskactions.io/") || k == v1.LabelFlyteTerminalState {
			t.Errorf("Flyte's action got label %s", k)
		}
	}
}

// An action an earlier version of this server labelled the old way
// (Flyte's label) is recorded once more at start, which history takes as
// it is, and labelled this server's way.
func TestOldLabelIsMigrated(t *testing.T) {
	n := newCountingNotifier(t)
	m := newManager(t, n)
	ctx := context.Background()
	run := newRun()
	id := actionOf(run, "a0")
	ta := mustEnqueue(t, m, echoRequest(id, ""))
	mustPut(t, m, id, 1, v1.PhaseSucceeded)
	eventually(t, 10*time.Second, "the terminal label", func() bool {
		got, _ := kubeClient(t).FlyteV1().TaskActions(ta.Namespace).Get(ctx, ta.Name, metav1.GetOptions{})
		return got != nil && got.Labels[v1.LabelTerminalState] == "true"
	})
	m.StopWatching()
	// As an earlier version left it: Flyte's label, not this server's.
	patch := []byte(`{"metadata":{"labels":{"` + v1.LabelTerminalState + `":null,"` + v1.LabelFlyteTerminalState + `":"true"}}}`)
	if _, err := kubeClient(t).FlyteV1().TaskActions(ta.Namespace).Patch(ctx, ta.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	newManager(t, n)
	eventually(t, 10*time.Second, "this server's label again", func() bool {
		got, _ := kubeClient(t).FlyteV1().TaskActions(ta.Namespace).Get(ctx, ta.Name, metav1.GetOptions{})
		return got != nil && got.Labels[v1.LabelTerminalState] == "true"
	})
	sum, err := n.Get(ctx, v1.RunID{Project: run.Project, Domain: run.Domain, Run: run.Run})
	if err != nil || sum.Phase != v1.PhaseSucceeded || sum.ActionCount != 1 || sum.PhaseCounts[v1.PhaseSucceeded] != 1 {
		t.Errorf("the run after the migration: %+v %v", sum, err)
	}
}
