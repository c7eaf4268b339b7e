package taskactions

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "taskactions/api/v1"
)

func TestAbortCascadesToGrandchildren(t *testing.T) {
	m := newManager(t, nil)
	ctx := context.Background()
	run := newRun()
	mustEnqueue(t, m, echoRequest(run.action("a0"), ""))
	mustEnqueue(t, m, echoRequest(run.action("c1"), "a0"))
	mustEnqueue(t, m, echoRequest(run.action("c2"), "a0"))
	mustEnqueue(t, m, echoRequest(run.action("g1"), "c1"))
	mustPut(t, m, run.action("c1"), 1, v1.PhaseRunning)
	mustPut(t, m, run.action("c2"), 1, v1.PhaseSucceeded)

	if err := m.AbortAction(ctx, run.action("a0"), "user pressed stop"); err != nil {
		t.Fatal(err)
	}
	want := map[string]v1.Phase{"a0": v1.PhaseAborted, "c1": v1.PhaseAborted, "g1": v1.PhaseAborted, "c2": v1.PhaseSucceeded}
	for name, phase := range want {
		ta, err := m.GetTaskAction(ctx, run.action(name))
		if err != nil {
			t.Fatal(err)
		}
		v := ViewOf(ta)
		if v.Phase != phase {
			t.Errorf("%s is %s, want %s", name, v.Phase, phase)
		}
		if phase == v1.PhaseAborted && v.AbortReason != "user pressed stop" {
			t.Errorf("%s abort reason %q", name, v.AbortReason)
		}
	}
	// Idempotent, and children of an aborted action are refused.
	if err := m.AbortAction(ctx, run.action("a0"), "again"); err != nil {
		t.Errorf("second abort: %v", err)
	}
	if _, _, err := m.Enqueue(ctx, echoRequest(run.action("late"), "a0")); !errors.Is(err, ErrConflict) {
		t.Errorf("child of an aborted parent: %v, want ErrConflict", err)
	}
	if err := m.AbortAction(ctx, run.action("nope"), ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("abort of a missing action: %v, want ErrNotFound", err)
	}
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
		id := run.action(fmt.Sprintf("a%d", i))
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
		ta, err := m.live(ctx, id)
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
