package taskactions

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/journal"
)

// Every run's root is called a0 here: a subscription keyed by parent name
// alone would see both runs.
func TestSubscriptionsDoNotLeakAcrossRuns(t *testing.T) {
	m := newManager(t, nil)
	run1 := newRun()
	run2 := v1.RunID{Project: run1.Project, Domain: run1.Domain, Run: run1.Run + "x"}

	sub1, _, snap := m.Subscribe(context.Background(), Scope{Run: run1, Action: "a0"}, nil)
	c1 := collect(t, sub1)
	runSub, _, _ := m.Subscribe(context.Background(), Scope{Run: run1}, nil)
	cRun := collect(t, runSub)
	if len(snap) != 0 {
		t.Fatalf("snapshot of an empty run has %d actions", len(snap))
	}
	for _, run := range []v1.RunID{run1, run2} {
		mustEnqueue(t, m, echoRequest(actionOf(run, "a0"), ""))
		mustEnqueue(t, m, echoRequest(actionOf(run, "c1"), "a0"))
		mustEnqueue(t, m, echoRequest(actionOf(run, "c2"), "a0"))
		mustEnqueue(t, m, echoRequest(actionOf(run, "g1"), "c1"))
		mustPut(t, m, actionOf(run, "c1"), 1, v1.PhaseRunning)
	}
	// The parent subscription sees a0, c1 and c2, not the grandchild.
	eventually(t, 10*time.Second, "run 1's updates", func() bool {
		l := c1.latest()
		return len(l) == 3 && l["c1"].Phase == v1.PhaseRunning && len(cRun.latest()) == 4
	})
	for _, c := range []*collector{c1, cRun} {
		for _, u := range c.updates() {
			if u.ID.Run != run1.Run {
				t.Fatalf("subscriber of %s got an update of %s", run1.Run, u.ID)
			}
			if c == c1 && u.ID.Name == "g1" {
				t.Fatalf("parent subscriber got a grandchild")
			}
		}
	}
}

func TestSnapshotThenLiveAndResume(t *testing.T) {
	m := newManager(t, nil)
	run := newRun()
	mustEnqueue(t, m, echoRequest(actionOf(run, "a0"), ""))
	mustEnqueue(t, m, echoRequest(actionOf(run, "c1"), "a0"))

	sub, start, snap := m.Subscribe(context.Background(), Scope{Run: run, Action: "a0"}, nil)
	if start.Resumed || len(snap) != 2 {
		t.Fatalf("fresh subscription: resumed=%v snapshot=%d, want a snapshot of a0 and c1", start.Resumed, len(snap))
	}
	c := collect(t, sub)
	mustPut(t, m, actionOf(run, "c1"), 1, v1.PhaseRunning)
	mustEnqueue(t, m, echoRequest(actionOf(run, "c2"), "a0"))
	eventually(t, 10*time.Second, "live updates", func() bool { return len(c.updates()) >= 2 })
	c.mu.Lock()
	seen := c.cursor[0]
	c.mu.Unlock()
	if seen <= start.Cursor {
		t.Fatalf("live cursor %d not after the snapshot cursor %d", seen, start.Cursor)
	}

	// Resuming from the first live event replays what came after it,
	// without a snapshot.
	mustPut(t, m, actionOf(run, "c2"), 1, v1.PhaseInitializing)
	eventually(t, 10*time.Second, "c2 initializing", func() bool {
		u := c.latest()["c2"]
		return u != nil && u.Phase == v1.PhaseInitializing
	})
	sub2, start2, snap2 := m.Subscribe(context.Background(), Scope{Run: run, Action: "a0"}, &seen)
	defer sub2.Close()
	if !start2.Resumed || snap2 != nil {
		t.Fatalf("resume: resumed=%v snapshot=%d", start2.Resumed, len(snap2))
	}
	var names []string
	for _, e := range start2.Replay {
		names = append(names, e.Value.ID.Name+":"+string(e.Value.Phase))
	}
	if want := "[c2:QUEUED c2:INITIALIZING]"; fmt.Sprint(names) != want {
		t.Fatalf("replay %v, want %s", names, want)
	}

	// A cursor the journal never covered gets a snapshot.
	old := start.Cursor - 1000
	_, start3, snap3 := m.Subscribe(context.Background(), Scope{Run: run, Action: "a0"}, &old)
	if start3.Resumed || len(snap3) != 3 {
		t.Fatalf("stale cursor: resumed=%v snapshot=%d, want a snapshot of 3", start3.Resumed, len(snap3))
	}
}

// 200 actions, 10 status changes each, written concurrently: every
// subscriber sees each action's changes in order and ends on its final
// state.
func TestPerObjectOrder(t *testing.T) {
	const objects, changes = 200, 10
	m := newManager(t, nil)
	run := newRun()
	mustEnqueue(t, m, echoRequest(actionOf(run, "a0"), ""))
	parentSub, _, _ := m.Subscribe(context.Background(), Scope{Run: run, Action: "a0"}, nil)
	runSub, _, _ := m.Subscribe(context.Background(), Scope{Run: run}, nil)
	subs := []*collector{collect(t, parentSub), collect(t, runSub)}

	var wg sync.WaitGroup
	for i := range objects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := actionOf(run, fmt.Sprintf("c%d", i))
			mustEnqueue(t, m, echoRequest(id, "a0"))
			// Attempts 1..9 running, then attempt 10 succeeds.
			for a := uint32(1); a < changes; a++ {
				mustPut(t, m, id, a, v1.PhaseRunning)
			}
			mustPut(t, m, id, changes, v1.PhaseSucceeded)
		}()
	}
	wg.Wait()
	for _, c := range subs {
		eventually(t, 30*time.Second, "final states", func() bool {
			n := 0
			for name, u := range c.latest() {
				if name != "a0" && u.Phase == v1.PhaseSucceeded && u.Attempts == changes {
					n++
				}
			}
			return n == objects
		})
		last := map[string]uint32{}
		var lastCursor uint64
		c.mu.Lock()
		for i, u := range c.all {
			if u.Attempts < last[u.ID.Name] {
				t.Errorf("%s went from attempt %d back to %d", u.ID.Name, last[u.ID.Name], u.Attempts)
			}
			last[u.ID.Name] = u.Attempts
			if c.cursor[i] <= lastCursor {
				t.Errorf("cursor %d after %d", c.cursor[i], lastCursor)
			}
			lastCursor = c.cursor[i]
		}
		if c.lagged {
			t.Errorf("subscriber lagged")
		}
		c.mu.Unlock()
	}
}

// A subscriber that stops reading holds up neither the informer nor a
// second subscriber, and gets either the latest states or a lag signal.
func TestSlowSubscriber(t *testing.T) {
	m := newManager(t, nil, func(c *Config) { c.Journal = journal.Config{MailboxSize: 8} })
	run := newRun()
	mustEnqueue(t, m, echoRequest(actionOf(run, "a0"), ""))
	for i := range 4 {
		mustEnqueue(t, m, echoRequest(actionOf(run, fmt.Sprintf("c%d", i)), "a0"))
	}
	slow, _, _ := m.Subscribe(context.Background(), Scope{Run: run}, nil)
	defer slow.Close()
	fastSub, _, _ := m.Subscribe(context.Background(), Scope{Run: run}, nil)
	fast := collect(t, fastSub)

	// Many changes on few actions: the slow one coalesces.
	for a := uint32(1); a <= 5; a++ {
		for i := range 4 {
			mustPut(t, m, actionOf(run, fmt.Sprintf("c%d", i)), a, v1.PhaseRunning)
		}
	}
	eventually(t, 10*time.Second, "the fast subscriber", func() bool {
		l := fast.latest()
		return len(l) == 4 && l["c0"].Attempts == 5 && l["c3"].Attempts == 5
	})
	got, lagged := slow.Drain(nil)
	if lagged {
		t.Fatalf("4 pending actions lagged a mailbox of 8")
	}
	if len(got) != 4 {
		t.Fatalf("slow subscriber got %d updates, want the latest of each of 4 actions", len(got))
	}
	for _, e := range got {
		if e.Value.Attempts != 5 {
			t.Errorf("%s coalesced to attempt %d, want the latest (5)", e.Value.ID.Name, e.Value.Attempts)
		}
	}

	// More distinct actions than the mailbox holds: a lag signal.
	for i := 4; i < 14; i++ {
		mustEnqueue(t, m, echoRequest(actionOf(run, fmt.Sprintf("c%d", i)), "a0"))
	}
	eventually(t, 10*time.Second, "the fast subscriber", func() bool { return len(fast.latest()) == 14 })
	if _, lagged := slow.Drain(nil); !lagged {
		t.Fatalf("slow subscriber past its bound was not told it lagged")
	}
}
