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

func phaseOf(t testing.TB, m *Manager, id ActionID) Action {
	t.Helper()
	ta, err := m.GetTaskAction(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ViewOf(ta)
}

// waitPhases waits until every named action of the run is in its phase,
// and, where it is ABORTED, carries reason.
func waitPhases(t testing.TB, m *Manager, run v1.RunID, want map[string]v1.Phase, reason string) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("phases %v", want), func() bool {
		for name, phase := range want {
			v := phaseOf(t, m, actionOf(run, name))
			if v.Phase != phase || (phase == v1.PhaseAborted && v.AbortReason != reason) {
				return false
			}
		}
		return true
	})
}

// The request records the abort on its target only; the aborter ends the
// unfinished descendants, grandchildren included, with the same reason,
// and leaves finished ones alone.
func TestAbortCascadesToGrandchildren(t *testing.T) {
	m := newManager(t, nil)
	runAborter(t, m)
	ctx := context.Background()
	run := newRun()
	mustEnqueue(t, m, echoRequest(actionOf(run, "a0"), ""))
	mustEnqueue(t, m, echoRequest(actionOf(run, "c1"), "a0"))
	mustEnqueue(t, m, echoRequest(actionOf(run, "c2"), "a0"))
	mustEnqueue(t, m, echoRequest(actionOf(run, "g1"), "c1"))
	mustPut(t, m, actionOf(run, "c1"), 1, v1.PhaseRunning)
	mustPut(t, m, actionOf(run, "c2"), 1, v1.PhaseSucceeded)

	if err := m.AbortAction(ctx, actionOf(run, "a0"), "user pressed stop"); err != nil {
		t.Fatal(err)
	}
	if v := phaseOf(t, m, actionOf(run, "a0")); v.Phase != v1.PhaseAborted || v.AbortReason != "user pressed stop" {
		t.Fatalf("the target right after the abort: %s %q, want ABORTED with the reason", v.Phase, v.AbortReason)
	}
	waitPhases(t, m, run, map[string]v1.Phase{"a0": v1.PhaseAborted, "c1": v1.PhaseAborted, "g1": v1.PhaseAborted, "c2": v1.PhaseSucceeded}, "user pressed stop")

	// Idempotent (the first reason stays), and children of an aborted
	// action are refused.
	if err := m.AbortAction(ctx, actionOf(run, "a0"), "again"); err != nil {
		t.Errorf("second abort: %v", err)
	}
	if v := phaseOf(t, m, actionOf(run, "a0")); v.AbortReason != "user pressed stop" {
		t.Errorf("a second abort changed the reason to %q", v.AbortReason)
	}
	if _, _, err := m.Enqueue(ctx, echoRequest(actionOf(run, "late"), "a0")); !errors.Is(err, ErrConflict) {
		t.Errorf("child of an aborted parent: %v, want ErrConflict", err)
	}
	if err := m.AbortAction(ctx, actionOf(run, "nope"), ""); !errors.Is(err, ErrNotFound) {
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
	for _, a := range [][2]string{{"a0", ""}, {"c1", "a0"}, {"c2", "a0"}, {"g1", "c2"}} {
		mustEnqueue(t, m, echoRequest(actionOf(run, a[0]), a[1]))
	}
	mustPut(t, m, actionOf(run, "a0"), 1, v1.PhaseSucceeded)
	mustPut(t, m, actionOf(run, "c2"), 1, v1.PhaseFailed)
	if err := m.AbortAction(context.Background(), actionOf(run, "a0"), "stop the stragglers"); err != nil {
		t.Fatal(err)
	}
	waitPhases(t, m, run, map[string]v1.Phase{"a0": v1.PhaseSucceeded, "c1": v1.PhaseAborted, "c2": v1.PhaseFailed, "g1": v1.PhaseAborted}, "stop the stragglers")
}

// The abort is in the objects, not in the request or the process: with no
// aborter running when it is recorded (the server died right after), a new
// manager's aborter finishes it.
func TestAbortResumesInANewProcess(t *testing.T) {
	first := newManager(t, nil)
	run := newRun()
	mustEnqueue(t, first, echoRequest(actionOf(run, "a0"), ""))
	for i := range 20 {
		mustEnqueue(t, first, echoRequest(actionOf(run, fmt.Sprintf("c%d", i)), "a0"))
	}
	if err := first.AbortAction(context.Background(), actionOf(run, "a0"), "before the crash"); err != nil {
		t.Fatal(err)
	}
	first.StopWatching()

	second := newManager(t, nil)
	runAborter(t, second)
	want := map[string]v1.Phase{"a0": v1.PhaseAborted}
	for i := range 20 {
		want[fmt.Sprintf("c%d", i)] = v1.PhaseAborted
	}
	waitPhases(t, second, run, want, "before the crash")
}

// A SUCCEEDED report racing an abort: one of them wins, and the loser
// never flips the phase afterwards.
func TestAbortRacingSuccess(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	sub, _, _ := m.Subscribe(context.Background(), Scope{Run: run}, nil)
	c := collect(t, sub)
	const rounds = 20
	for i := range rounds {
		id := actionOf(run, fmt.Sprintf("a%d", i))
		mustEnqueue(t, m, echoRequest(id, ""))
		mustPut(t, m, id, 1, v1.PhaseRunning)
		var wg sync.WaitGroup
		var putErr, abortErr error
		wg.Add(2)
		go func() { defer wg.Done(); _, putErr = m.PutStatus(ctx, id, 1, StatusUpdate{Phase: v1.PhaseSucceeded}) }()
		go func() { defer wg.Done(); abortErr = m.AbortAction(ctx, id, "race") }()
		wg.Wait()
		if abortErr != nil {
			t.Fatalf("abort: %v", abortErr)
		}
		ta, err := m.objects.live(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		final := v1.PhaseOf(ta.Status.Conditions)
		switch {
		case final == v1.PhaseSucceeded && putErr != nil:
			t.Errorf("%s succeeded but the report failed: %v", id.Name, putErr)
		case final == v1.PhaseAborted && putErr != nil && !errors.Is(putErr, ErrConflict):
			t.Errorf("%s aborted; the losing report got %v, want ErrConflict", id.Name, putErr)
		case final != v1.PhaseSucceeded && final != v1.PhaseAborted:
			t.Errorf("%s ended %s", id.Name, final)
		}
		terminalEntries := 0
		for _, h := range ta.Status.PhaseHistory {
			if v1.PhaseOfReason(h.Phase).Terminal() {
				terminalEntries++
			}
		}
		if terminalEntries != 1 {
			t.Errorf("%s has %d terminal history entries", id.Name, terminalEntries)
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
