package taskactions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/taskactions/aborter"
	"taskactions/internal/testenv"
)

// runAborter runs an aborter on m until the test ends.
func runAborter(t testing.TB, m *Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = aborter.New(m, 4, testenv.Logger()).Run(ctx, func() {}) }()
	t.Cleanup(func() { cancel(); <-done })
}

// watchRun collects the updates of a run's actions from now on.
func watchRun(t testing.TB, m *Manager, run v1.RunID) *collector {
	t.Helper()
	sub, _, _ := m.Subscribe(context.Background(), Scope{Run: run}, nil)
	return collect(t, sub)
}

// waitPhases waits until the last update of every named action shows its
// phase: an ABORTED one deleted (an abort deletes, as Flyte's does), with
// the reason, and its phase history ending ABORTED with it; any other
// still live.
func waitPhases(t testing.TB, m *Manager, c *collector, run v1.RunID, want map[string]v1.Phase, reason string) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("phases %v", want), func() bool {
		latest := c.latest()
		for name, phase := range want {
			if phase != v1.PhaseAborted {
				ta, err := m.GetTaskAction(context.Background(), actionOf(run, name))
				if err != nil || v1.PhaseOf(ta.Status.Conditions) != phase {
					return false
				}
				continue
			}
			u := latest[name]
			if u == nil || !u.Deleted || u.Phase != v1.PhaseAborted || u.AbortReason != reason {
				return false
			}
		}
		return true
	})
	for name, u := range c.latest() {
		if want[name] != v1.PhaseAborted {
			continue
		}
		h := u.PhaseHistory
		if len(h) == 0 || h[len(h)-1].Phase != v1.PhaseAborted || h[len(h)-1].Message != reason {
			t.Errorf("%s: phase history %+v, want it to end ABORTED with the reason", name, h)
		}
	}
}

// The request records the abort on its target; the aborter gives every
// unfinished descendant, grandchildren included, the same reason and then
// deletes them, the target last, and leaves finished ones alone.
func TestAbortCascadesToGrandchildren(t *testing.T) {
	m := newManager(t, nil)
	runAborter(t, m)
	ctx := context.Background()
	run := newRun()
	c := watchRun(t, m, run)
	mustEnqueue(t, m, echoRequest(actionOf(run, "a0"), ""))
	mustEnqueue(t, m, echoRequest(actionOf(run, "c1"), "a0"))
	mustEnqueue(t, m, echoRequest(actionOf(run, "c2"), "a0"))
	mustEnqueue(t, m, echoRequest(actionOf(run, "g1"), "c1"))
	mustPut(t, m, actionOf(run, "c1"), 1, v1.PhaseRunning)
	mustPut(t, m, actionOf(run, "c2"), 1, v1.PhaseSucceeded)

	if _, err := m.AbortAction(ctx, actionOf(run, "a0"), "user pressed stop"); err != nil {
		t.Fatal(err)
	}
	waitPhases(t, m, c, run, map[string]v1.Phase{"a0": v1.PhaseAborted, "c1": v1.PhaseAborted, "g1": v1.PhaseAborted, "c2": v1.PhaseSucceeded}, "user pressed stop")

	// Idempotent, and an abort of what is gone is not found.
	if _, err := m.AbortAction(ctx, actionOf(run, "c2"), "again"); err != nil {
		t.Errorf("abort of a finished action: %v", err)
	}
	if ta, err := m.GetTaskAction(ctx, actionOf(run, "c2")); err != nil || v1.PhaseOf(ta.Status.Conditions) != v1.PhaseSucceeded {
		t.Errorf("a finished action after an abort: %v, want it SUCCEEDED still", err)
	}
	if _, err := m.AbortAction(ctx, actionOf(run, "nope"), ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("abort of a missing action: %v, want ErrNotFound", err)
	}
}

// Aborting a finished action (a root that succeeded while children still
// run) keeps its phase and still ends what runs below it, through
// finished levels too.
func TestAbortOfFinishedActionEndsItsUnfinishedDescendants(t *testing.T) {
	m := newManager(t, nil)
	runAborter(t, m)
	run := newRun()
	c := watchRun(t, m, run)
	for _, a := range [][2]string{{"a0", ""}, {"c1", "a0"}, {"c2", "a0"}, {"g1", "c2"}} {
		mustEnqueue(t, m, echoRequest(actionOf(run, a[0]), a[1]))
	}
	mustPut(t, m, actionOf(run, "a0"), 1, v1.PhaseSucceeded)
	mustPut(t, m, actionOf(run, "c2"), 1, v1.PhaseFailed)
	if _, err := m.AbortAction(context.Background(), actionOf(run, "a0"), "stop the stragglers"); err != nil {
		t.Fatal(err)
	}
	waitPhases(t, m, c, run, map[string]v1.Phase{"a0": v1.PhaseSucceeded, "c1": v1.PhaseAborted, "c2": v1.PhaseFailed, "g1": v1.PhaseAborted}, "stop the stragglers")
}

// The abort is in the objects, not in the request or the process: with no
// aborter running when it is recorded (the server died right after), the
// target waits for its children to have their reasons, takes no new
// child, and a new manager's aborter finishes the abort.
func TestAbortResumesInANewProcess(t *testing.T) {
	first := newManager(t, nil)
	run := newRun()
	mustEnqueue(t, first, echoRequest(actionOf(run, "a0"), ""))
	for i := range 20 {
		mustEnqueue(t, first, echoRequest(actionOf(run, fmt.Sprintf("c%d", i)), "a0"))
	}
	ctx := context.Background()
	if _, err := first.AbortAction(ctx, actionOf(run, "a0"), "before the crash"); err != nil {
		t.Fatal(err)
	}
	if ta, err := first.GetTaskAction(ctx, actionOf(run, "a0")); err != nil || v1.AbortReasonOf(ta) != "before the crash" {
		t.Fatalf("the target right after the abort: %v, want it there with the reason (its children have none yet)", err)
	}
	if _, _, err := first.Enqueue(ctx, echoRequest(actionOf(run, "late"), "a0")); !errors.Is(err, ErrConflict) {
		t.Errorf("child of a parent being aborted: %v, want ErrConflict", err)
	}
	first.StopWatching()

	second := newManager(t, nil)
	c := watchRun(t, second, run)
	runAborter(t, second)
	want := map[string]v1.Phase{"a0": v1.PhaseAborted}
	for i := range 20 {
		want[fmt.Sprintf("c%d", i)] = v1.PhaseAborted
	}
	waitPhases(t, second, c, run, want, "before the crash")
}

// A SUCCEEDED report racing an abort: one of them wins, and the loser
// never flips the phase afterwards.
func TestAbortRacingSuccess(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	c := watchRun(t, m, run)
	const rounds = 20
	for i := range rounds {
		id := actionOf(run, fmt.Sprintf("a%d", i))
		mustEnqueue(t, m, echoRequest(id, ""))
		mustPut(t, m, id, 1, v1.PhaseRunning)
		var wg sync.WaitGroup
		var putErr, abortErr error
		wg.Add(2)
		go func() { defer wg.Done(); _, putErr = m.PutStatus(ctx, id, 1, StatusUpdate{Phase: v1.PhaseSucceeded}) }()
		go func() { defer wg.Done(); _, abortErr = m.AbortAction(ctx, id, "race") }()
		wg.Wait()
		if abortErr != nil {
			t.Fatalf("abort: %v", abortErr)
		}
		ta, err := m.objects.live(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound): // aborted: deleted
			if putErr != nil && !errors.Is(putErr, ErrConflict) && !errors.Is(putErr, ErrNotFound) {
				t.Errorf("%s aborted; the losing report got %v, want ErrConflict or ErrNotFound", id.Name, putErr)
			}
		case err != nil:
			t.Fatal(err)
		case v1.PhaseOf(ta.Status.Conditions) != v1.PhaseSucceeded:
			t.Errorf("%s ended %s, live", id.Name, v1.PhaseOf(ta.Status.Conditions))
		case putErr != nil:
			t.Errorf("%s succeeded but the report failed: %v", id.Name, putErr)
		}
	}
	// Watched live, no action ever leaves its first terminal phase.
	eventually(t, 10*time.Second, "all terminal", func() bool {
		n := 0
		for _, u := range c.latest() {
			if u.Phase.Terminal() {
				n++
			}
		}
		return n == rounds
	})
	first := map[string]v1.Phase{}
	for _, u := range c.updates() {
		if p, ok := first[u.ID.Name]; ok && p != u.Phase {
			t.Errorf("%s flipped from %s to %s", u.ID.Name, p, u.Phase)
		}
		if u.Phase.Terminal() {
			if _, ok := first[u.ID.Name]; !ok {
				first[u.ID.Name] = u.Phase
			}
		}
	}
}
