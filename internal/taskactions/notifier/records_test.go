package notifier_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/taskactions"
	"taskactions/internal/taskactions/actionstest"
	"taskactions/internal/testenv"
)

// The run service learns each action's terminal phase once, across
// restarts, and nothing is written on the object for it: a restart asks
// history what it holds.
func TestTerminalStatusRecordedOnceAcrossRestart(t *testing.T) {
	n := actionstest.NewCountingRuns(t)
	s := actionstest.Start(t, cp, n)
	m := s.Manager
	run := actionstest.NewRun()
	id := actionstest.ActionOf(run, "a0")
	ta := actionstest.MustEnqueue(t, m, actionstest.Echo(id, ""))
	actionstest.MustPut(t, m, id, 1, v1.PhaseRunning)
	actionstest.MustPut(t, m, id, 1, v1.PhaseSucceeded)

	testenv.Eventually(t, 10*time.Second, "the terminal status in history", func() bool {
		held, err := n.Recorded(context.Background())
		return err == nil && held[ta.UID] == v1.PhaseSucceeded
	})
	if got := n.TerminalCount(id); got != 1 {
		t.Fatalf("terminal status reported %d times before the restart, want 1", got)
	}
	sum, err := n.Get(context.Background(), v1.RunID{Project: run.Project, Domain: run.Domain, Run: run.Run})
	if err != nil || sum.Phase != v1.PhaseSucceeded || sum.EndedAt == nil {
		t.Fatalf("run summary %+v", sum)
	}

	s.Stop()
	s2 := actionstest.Start(t, cp, n)
	// Touch the object so its worker handles one more event after the
	// initial list; once it has, the initial one was handled too.
	before := s2.Notifier.EventsHandled()
	patch := []byte(`{"metadata":{"annotations":{"touched":"yes"}}}`)
	if _, err := actionstest.Client(t, cp).FlyteV1().TaskActions(ta.Namespace).Patch(context.Background(), ta.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the worker to handle the touch", func() bool { return s2.Drained(before) })
	if got := n.TerminalCount(id); got != 1 {
		t.Fatalf("terminal status reported %d times across a restart, want exactly 1", got)
	}
	got, err := actionstest.Client(t, cp).FlyteV1().TaskActions(ta.Namespace).Get(context.Background(), ta.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{v1.LabelTerminalState, v1.LabelFlyteTerminalState} {
		if _, ok := got.Labels[k]; ok {
			t.Errorf("the recorded action carries %s", k)
		}
	}
}

// An action Flyte's Actions service marked recorded (its label) still has
// its terminal phase recorded here: the label is Flyte's bookkeeping, not
// this server's.
func TestFlytesLabelHidesNoTerminalPhase(t *testing.T) {
	n := actionstest.NewCountingRuns(t)
	s := actionstest.Start(t, cp, n)
	m := s.Manager
	ctx := context.Background()
	run := actionstest.NewRun()
	id := actionstest.ActionOf(run, "a0")
	ta := actionstest.MustEnqueue(t, m, actionstest.Echo(id, ""))
	actionstest.MustPut(t, m, id, 1, v1.PhaseRunning)
	// Flyte's Actions service, watching the namespace, recorded the
	// action in its run service and labelled it.
	patch := []byte(`{"metadata":{"labels":{"` + v1.LabelFlyteTerminalState + `":"true"}}}`)
	if _, err := actionstest.Client(t, cp).FlyteV1().TaskActions(ta.Namespace).Patch(ctx, ta.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	actionstest.MustPut(t, m, id, 1, v1.PhaseSucceeded)
	testenv.Eventually(t, 10*time.Second, "the terminal phase recorded here", func() bool { return n.TerminalCount(id) == 1 })
}

// Actions Flyte enqueued get no label of this server's: their terminal
// phase is recorded, and the object is left as Flyte wrote it.
func TestFlytesActionsAreNotLabelled(t *testing.T) {
	n := actionstest.NewCountingRuns(t)
	s := actionstest.Start(t, cp, n)
	ctx := context.Background()
	run := actionstest.NewRun()
	ta := actionstest.CreateFlytes(t, actionstest.Client(t, cp), actionstest.FlyteFixture(t, "succeeded"), run, "done")
	testenv.Eventually(t, 10*time.Second, "its terminal phase recorded", func() bool { return n.TerminalCount(actionstest.ActionOf(run, "done")) == 1 })
	// One more event, handled after the terminal one: had a label been
	// patched, the cache would have it by now.
	before := s.Notifier.EventsHandled()
	patch := []byte(`{"metadata":{"annotations":{"touched":"yes"}}}`)
	if _, err := actionstest.Client(t, cp).FlyteV1().TaskActions("flyte").Patch(ctx, ta.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the touch handled", func() bool { return s.Drained(before) })
	got, err := actionstest.Client(t, cp).FlyteV1().TaskActions("flyte").Get(ctx, ta.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k := range got.Labels {
		if strings.HasPrefix(k, "taskactions.io/") || k == v1.LabelFlyteTerminalState {
			t.Errorf("Flyte's action got label %s", k)
		}
	}
}

// Actions earlier versions of this server labelled (Flyte's label, then
// this server's) are not recorded again after a restart: history holds
// them, which is what decides. The labels stay where they were.
func TestOldLabelsChangeNothing(t *testing.T) {
	n := actionstest.NewCountingRuns(t)
	s := actionstest.Start(t, cp, n)
	m := s.Manager
	ctx := context.Background()
	run := actionstest.NewRun()
	var tas []*v1.TaskAction
	for _, name := range []string{"a0", "a1"} {
		id := actionstest.ActionOf(run, name)
		ta := actionstest.MustEnqueue(t, m, actionstest.Echo(id, ""))
		tas = append(tas, ta)
		actionstest.MustPut(t, m, id, 1, v1.PhaseSucceeded)
		testenv.Eventually(t, 10*time.Second, "the terminal status in history", func() bool {
			held, err := n.Recorded(ctx)
			return err == nil && held[ta.UID] == v1.PhaseSucceeded
		})
	}
	s.Stop()
	// As earlier versions left them.
	for i, label := range []string{v1.LabelFlyteTerminalState, v1.LabelTerminalState} {
		patch := []byte(`{"metadata":{"labels":{"` + label + `":"true"}}}`)
		if _, err := actionstest.Client(t, cp).FlyteV1().TaskActions(tas[i].Namespace).Patch(ctx, tas[i].Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s2 := actionstest.Start(t, cp, n)
	before := s2.Notifier.EventsHandled()
	patch := []byte(`{"metadata":{"annotations":{"touched":"yes"}}}`)
	for _, ta := range tas {
		if _, err := actionstest.Client(t, cp).FlyteV1().TaskActions(ta.Namespace).Patch(ctx, ta.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 10*time.Second, "the touches handled", func() bool { return s2.Drained(before + 1) })
	for _, name := range []string{"a0", "a1"} {
		if got := n.TerminalCount(actionstest.ActionOf(run, name)); got != 1 {
			t.Errorf("%s: terminal status reported %d times across the restart, want 1", name, got)
		}
	}
	sum, err := n.Get(ctx, v1.RunID{Project: run.Project, Domain: run.Domain, Run: run.Run})
	if err != nil || sum.Phase != v1.PhaseSucceeded || sum.ActionCount != 2 || sum.PhaseCounts[v1.PhaseSucceeded] != 2 {
		t.Errorf("the run after the restart: %+v %v", sum, err)
	}
}

// An abort through this server of an action Flyte enqueued is Flyte's
// abort: the object is deleted (so Flyte's executor stops the task, and
// Flyte's Actions service reads ABORTED), and history keeps the action
// ABORTED with the reason given. A terminal condition instead would read
// FAILED in Flyte and leave its task running.
func TestAbortOfFlytesActionDeletesIt(t *testing.T) {
	n := actionstest.NewCountingRuns(t)
	m := actionstest.Start(t, cp, n, func(c *taskactions.Config) { c.History = n.Store() }).Manager
	ctx := context.Background()
	run := actionstest.NewRun()
	ta := actionstest.CreateFlytes(t, actionstest.Client(t, cp), actionstest.FlyteFixture(t, "running"), run, "n0")
	id := actionstest.ActionOf(run, "n0")
	testenv.Eventually(t, 10*time.Second, "the cache to have it RUNNING", func() bool {
		got, _ := m.GetTaskAction(ctx, id)
		return got != nil && v1.PhaseOfAction(got) == v1.PhaseRunning
	})
	if _, err := m.AbortAction(ctx, id, "stop the Flyte task"); err != nil {
		t.Fatal(err)
	}
	if _, err := actionstest.Client(t, cp).FlyteV1().TaskActions("flyte").Get(ctx, ta.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the object after the abort: %v, want it deleted", err)
	}
	var rec *taskactions.ActionUpdate
	testenv.Eventually(t, 10*time.Second, "history to have it ABORTED", func() bool {
		rec, _ = m.Action(ctx, id)
		return rec != nil && rec.Phase == v1.PhaseAborted
	})
	if rec.AbortReason != "stop the Flyte task" {
		t.Errorf("the abort reason in history: %q", rec.AbortReason)
	}
	// Gone from the control plane: the API answers from history.
	if _, err := m.AbortAction(ctx, id, "again"); !errors.Is(err, taskactions.ErrNotFound) {
		t.Errorf("a second abort: %v, want ErrNotFound", err)
	}
}
