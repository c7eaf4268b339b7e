package runs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/journal"
)

const proj, dom = "p", "d"

var (
	t0  = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	run = RunID{proj, dom, "r1"}
)

// at turns the small integers of the tables into times.
func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// act is the first incarnation of an action of run r1. "a0" is the root,
// created at 10; children are created at 20, so StartedAt shows whose
// CreatedAt was taken.
func act(name string, ph v1.Phase, updated int) Action {
	a := Action{Project: proj, Domain: dom, Run: run.Run, Name: name, UID: name + "#1",
		Phase: ph, CreatedAt: at(20), UpdatedAt: at(updated)}
	if name == "a0" {
		a.CreatedAt = at(10)
	} else {
		a.Parent = "a0"
	}
	return a
}

// incarnation is another object under the same name.
func incarnation(a Action, uid string, created int) Action {
	a.UID, a.CreatedAt = uid, at(created)
	return a
}

func deleted(a Action) Action { a.Deleted = true; return a }

func rootOf(project, domain, runName string, ph v1.Phase, created int) Action {
	a := act("a0", ph, created)
	a.Project, a.Domain, a.Run, a.CreatedAt = project, domain, runName, at(created)
	return a
}

// note is one call of the manager: RecordAction or UpdateActionStatus.
type note struct {
	update bool
	a      Action
}

func rec(a Action) note { return note{false, a} }
func upd(a Action) note { return note{true, a} }

func (n note) send(s *Service) error {
	if n.update {
		return s.UpdateActionStatus(context.Background(), n.a)
	}
	return s.RecordAction(context.Background(), n.a)
}

func notify(t *testing.T, s *Service, notes ...note) {
	t.Helper()
	for _, n := range notes {
		if err := n.send(s); err != nil {
			t.Fatal(err)
		}
	}
}

// describe renders a summary in the tables' terms. Counts are in
// alphabetical phase order; a mismatch between the counts and ActionCount is
// called out, since summary() hides zero and negative counts.
func describe(s Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s n=%d", s.Phase, s.ActionCount)
	sum := 0
	for _, p := range slices.Sorted(maps.Keys(s.PhaseCounts)) {
		fmt.Fprintf(&b, " %s:%d", p, s.PhaseCounts[p])
		sum += s.PhaseCounts[p]
	}
	if sum != s.ActionCount {
		b.WriteString(" (counts do not add up)")
	}
	end := "-"
	if s.EndedAt != nil {
		end = sec(*s.EndedAt)
	}
	fmt.Fprintf(&b, " start=%s end=%s", sec(s.StartedAt), end)
	return b.String()
}

func sec(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	return fmt.Sprint(int(t.Sub(t0) / time.Second))
}

// drain returns what the subscription has pending, going through Ready as
// a stream handler would.
func drain(t *testing.T, sub *journal.Subscription[*Event]) []journal.Entry[*Event] {
	t.Helper()
	select {
	case <-sub.Ready():
	default:
		return nil
	}
	out, lagged := sub.Drain(nil)
	if lagged {
		t.Fatal("subscription lagged")
	}
	return out
}

func subscribe(t *testing.T, s *Service, project, domain string, after *uint64) (*journal.Subscription[*Event], journal.Start[*Event], []Summary) {
	sub, start, snap := s.Subscribe(project, domain, after)
	t.Cleanup(sub.Close)
	return sub, start, snap
}

func get(t *testing.T, s *Service, id RunID) string {
	t.Helper()
	sum, ok := s.Get(id)
	if !ok {
		t.Fatalf("Get(%v): not found", id)
	}
	return describe(sum)
}

const (
	queued    = v1.PhaseQueued
	running   = v1.PhaseRunning
	succeeded = v1.PhaseSucceeded
	failed    = v1.PhaseFailed
)

func TestSummary(t *testing.T) {
	type tc struct {
		name       string
		notes      []note
		want       string
		wantEvents int // one per notification that changed the summary
	}
	tests := []tc{
		{"root and children", []note{
			rec(act("a0", queued, 10)), rec(act("a1", queued, 11)), rec(act("a2", queued, 11)),
			upd(act("a1", running, 12)), upd(act("a0", running, 12)),
		}, "RUNNING n=3 QUEUED:1 RUNNING:2 start=10 end=-", 5},
		{"no root yet", []note{rec(act("a1", running, 12))},
			"UNSPECIFIED n=1 RUNNING:1 start=20 end=-", 1},
		{"terminal child does not end the run", []note{
			rec(act("a0", running, 11)), rec(act("a1", failed, 14)),
		}, "RUNNING n=2 FAILED:1 RUNNING:1 start=10 end=-", 2},
		{"terminal kept against a later non-terminal", []note{
			rec(act("a0", succeeded, 15)), upd(act("a0", running, 16)),
		}, "SUCCEEDED n=1 SUCCEEDED:1 start=10 end=15", 1},
		{"terminal kept against a later terminal", []note{
			rec(act("a0", succeeded, 15)), upd(act("a0", failed, 16)),
		}, "SUCCEEDED n=1 SUCCEEDED:1 start=10 end=15", 1},
		{"older update ignored", []note{
			rec(act("a0", running, 15)), upd(act("a0", v1.PhaseInitializing, 12)),
		}, "RUNNING n=1 RUNNING:1 start=10 end=-", 1},
		// The manager's RecordAction may lose the race to a status update.
		{"update before record", []note{
			upd(act("a0", running, 12)), rec(act("a0", queued, 10)),
		}, "RUNNING n=1 RUNNING:1 start=10 end=-", 1},
		{"deletion of an older incarnation ignored", []note{
			rec(act("a0", running, 11)), rec(incarnation(act("a1", running, 31), "a1#2", 30)),
			upd(deleted(act("a1", succeeded, 40))),
		}, "RUNNING n=2 RUNNING:2 start=10 end=-", 2},
		{"deletion of an unseen newer incarnation ignored", []note{
			rec(act("a0", running, 11)), rec(act("a1", running, 12)),
			upd(deleted(incarnation(act("a1", succeeded, 40), "a1#2", 30))),
		}, "RUNNING n=2 RUNNING:2 start=10 end=-", 2},
		// A deleted action leaves the run at once.
		{"deletion takes the action out", []note{
			rec(act("a0", running, 11)), rec(act("a1", running, 12)), upd(deleted(act("a1", running, 13))),
		}, "RUNNING n=1 RUNNING:1 start=10 end=-", 3},
		{"newer incarnation replaces", []note{
			rec(act("a0", running, 11)), rec(act("a1", failed, 14)),
			rec(incarnation(act("a1", queued, 30), "a1#2", 30)),
		}, "RUNNING n=2 QUEUED:1 RUNNING:1 start=10 end=-", 3},
		{"older incarnation ignored", []note{
			rec(act("a0", running, 11)), rec(incarnation(act("a1", running, 31), "a1#2", 30)),
			upd(act("a1", succeeded, 40)),
		}, "RUNNING n=2 RUNNING:2 start=10 end=-", 2},
		// A new root object is a new lifetime of the run: the old one's end
		// no longer applies.
		{"newer root incarnation is not ended", []note{
			rec(act("a0", succeeded, 15)), rec(incarnation(act("a0", running, 31), "a0#2", 30)),
		}, "RUNNING n=1 RUNNING:1 start=30 end=-", 2},
	}
	for _, p := range []v1.Phase{succeeded, failed, v1.PhaseAborted, v1.PhaseTimedOut} {
		tests = append(tests, tc{"root " + string(p) + " ends the run", []note{
			rec(act("a0", running, 11)), rec(act("a1", running, 12)),
			upd(act("a1", p, 14)), upd(act("a0", p, 15)),
		}, fmt.Sprintf("%s n=2 %s:2 start=10 end=15", p, p), 4})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(journal.Config{})
			sub, _, _ := subscribe(t, s, proj, dom, nil)
			events := 0
			for _, n := range tt.notes {
				notify(t, s, n)
				events += len(drain(t, sub))
			}
			if got := get(t, s, run); got != tt.want {
				t.Errorf("summary = %q\n            want %q", got, tt.want)
			}
			if events != tt.wantEvents {
				t.Errorf("%d events published, want %d", events, tt.wantEvents)
			}
		})
	}
}

func TestIdempotent(t *testing.T) {
	tests := []struct {
		name  string
		prior []note
		again note
	}{
		{"record", nil, rec(act("a0", queued, 10))},
		{"phase change", []note{rec(act("a0", queued, 10))}, upd(act("a0", running, 12))},
		{"root terminal", []note{rec(act("a0", running, 11))}, upd(act("a0", succeeded, 15))},
		{"new incarnation", []note{rec(act("a0", running, 11)), rec(act("a1", failed, 14))},
			rec(incarnation(act("a1", queued, 30), "a1#2", 30))},
		{"deletion", []note{rec(act("a0", running, 11)), rec(act("a1", running, 12))},
			upd(deleted(act("a1", succeeded, 14)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(journal.Config{})
			notify(t, s, tt.prior...)
			sub, _, _ := subscribe(t, s, proj, dom, nil)
			notify(t, s, tt.again)
			first := get(t, s, run)
			if evs := drain(t, sub); len(evs) != 1 || describe(evs[0].Value.Summary) != first {
				t.Fatalf("first notification: %d events, want one carrying %q", len(evs), first)
			}
			notify(t, s, tt.again)
			if evs := drain(t, sub); len(evs) != 0 {
				t.Errorf("repeat published %q", describe(evs[0].Value.Summary))
			}
			if got := get(t, s, run); got != first {
				t.Errorf("repeat changed the summary from %q to %q", first, got)
			}
		})
	}
}

// Restore is what a restart replays, so it must land where the live
// notifications landed.
func TestRestore(t *testing.T) {
	live := []note{
		rec(act("a0", queued, 10)), rec(act("a1", queued, 11)), upd(act("a1", succeeded, 13)),
		rec(act("a2", running, 12)), upd(act("a0", failed, 15)),
		rec(rootOf(proj, dom, "r2", running, 5)),
	}
	final := []Action{
		act("a1", succeeded, 13), act("a0", failed, 15), act("a2", running, 12),
		rootOf(proj, dom, "r2", running, 5),
	}
	notified, restored := New(journal.Config{}), New(journal.Config{})
	notify(t, notified, live...)
	restored.Restore(final)
	listed := func(s *Service) (out []string) {
		for _, sum := range s.List(proj, dom) {
			out = append(out, sum.ID.Run+" "+describe(sum))
		}
		return out
	}
	if got, want := listed(restored), listed(notified); !slices.Equal(got, want) {
		t.Errorf("restored %q\n  notified %q", got, want)
	}
	if g := get(t, restored, run); g != "FAILED n=3 FAILED:1 RUNNING:1 SUCCEEDED:1 start=10 end=15" {
		t.Errorf("restored r1 = %q", g)
	}
}

func TestListAndGet(t *testing.T) {
	s := New(journal.Config{})
	notify(t, s,
		rec(rootOf(proj, dom, "old", running, 10)), rec(rootOf(proj, dom, "new", running, 30)),
		rec(rootOf(proj, dom, "mid", running, 20)),
		rec(rootOf(proj, "d2", "other-domain", running, 40)), rec(rootOf("p2", dom, "other-project", running, 50)),
		// Nothing to record: the deletion of an action never seen, without a phase.
		upd(deleted(rootOf(proj, dom, "ghost", "", 60))),
	)

	var names []string
	for _, sum := range s.List(proj, dom) {
		names = append(names, sum.ID.Run)
	}
	if want := []string{"new", "mid", "old"}; !slices.Equal(names, want) {
		t.Errorf("List = %v, want %v", names, want)
	}
	for _, id := range []RunID{
		{proj, dom, "unknown"}, {proj, dom, "other-domain"}, {"p2", "d2", "other-project"},
		{proj, dom, "ghost"},
	} {
		if sum, ok := s.Get(id); ok {
			t.Errorf("Get(%v) = %q, want not found", id, describe(sum))
		}
	}
}

func TestSubscribe(t *testing.T) {
	s := New(journal.Config{})
	notify(t, s, rec(rootOf(proj, dom, "r0", running, 1)), rec(rootOf(proj, dom, "r9", queued, 5)))
	live, start, snap := subscribe(t, s, proj, dom, nil)
	if start.Resumed || len(snap) != 2 || snap[0].ID.Run != "r9" || snap[1].ID.Run != "r0" {
		t.Fatalf("resumed=%v, snapshot %v; want r9 then r0, not resumed", start.Resumed, snap)
	}

	// cursors[k] is where a client that has seen k live events stands.
	cursors := []uint64{start.Cursor}
	var seen []string
	for _, n := range []note{
		rec(act("a0", queued, 10)), rec(rootOf(proj, dom, "r2", queued, 20)),
		rec(rootOf(proj, "d2", "elsewhere", queued, 30)), upd(act("a0", running, 12)),
	} {
		notify(t, s, n)
		for _, e := range drain(t, live) {
			if e.Cursor <= cursors[len(cursors)-1] {
				t.Fatalf("cursor %d after %d", e.Cursor, cursors[len(cursors)-1])
			}
			cursors = append(cursors, e.Cursor)
			seen = append(seen, e.Key+" "+describe(e.Value.Summary))
		}
	}
	// Each event keeps the summary of its moment, not r1's latest.
	if want := []string{
		"r1 QUEUED n=1 QUEUED:1 start=10 end=-",
		"r2 QUEUED n=1 QUEUED:1 start=20 end=-",
		"r1 RUNNING n=1 RUNNING:1 start=10 end=-",
	}; !slices.Equal(seen, want) {
		t.Fatalf("live events %q\n      want %q", seen, want)
	}
	if latest := "r1 " + get(t, s, run); seen[2] != latest {
		t.Fatalf("last event %q, Get %q", seen[2], latest)
	}

	for k := range cursors {
		t.Run(fmt.Sprintf("after %d seen", k), func(t *testing.T) {
			wire := s.Cursors().FormatCursor(cursors[k])
			after, ok := s.Cursors().ParseCursor(wire)
			if !ok || after != cursors[k] {
				t.Fatalf("ParseCursor(%q) = %d, %v; want %d", wire, after, ok, cursors[k])
			}
			_, st, snap := subscribe(t, s, proj, dom, &after)
			if !st.Resumed || snap != nil {
				t.Fatalf("resumed=%v with %d snapshot summaries, want a resume", st.Resumed, len(snap))
			}
			var got []string
			for _, e := range st.Replay {
				got = append(got, e.Key+" "+describe(e.Value.Summary))
			}
			if want := seen[k:]; !slices.Equal(got, want) {
				t.Errorf("replay %q\n want %q", got, want)
			}
			if last := cursors[len(cursors)-1]; st.Cursor < last {
				t.Errorf("start cursor %d, want at least %d", st.Cursor, last)
			}
		})
	}
}

// Epochs keep a cursor from a previous process (whose counter restarted)
// from resuming into the wrong history.
func TestCursorOfAnotherService(t *testing.T) {
	a, b := New(journal.Config{}), New(journal.Config{})
	notify(t, a, rec(act("a0", queued, 10)))
	_, start, _ := subscribe(t, a, proj, dom, nil)
	wire := a.Cursors().FormatCursor(start.Cursor)
	if c, ok := a.Cursors().ParseCursor(wire); !ok || c != start.Cursor {
		t.Fatalf("service A parses its own %q as %d, %v", wire, c, ok)
	}
	if c, ok := b.Cursors().ParseCursor(wire); ok {
		t.Errorf("service B parsed A's cursor %q as %d", wire, c)
	}
}

func TestTopicsIsolated(t *testing.T) {
	pairs := [][2]string{{proj, dom}, {proj, "d2"}, {"p2", dom}}
	s := New(journal.Config{})
	subs := map[[2]string]*journal.Subscription[*Event]{}
	for _, pd := range pairs {
		subs[pd], _, _ = subscribe(t, s, pd[0], pd[1], nil)
	}
	for _, pd := range pairs {
		notify(t, s, rec(rootOf(pd[0], pd[1], "same-run", running, 10)))
	}
	for _, pd := range pairs {
		evs := drain(t, subs[pd])
		if len(evs) != 1 {
			t.Errorf("%v: %d events, want its own one", pd, len(evs))
			continue
		}
		if id := evs[0].Value.Summary.ID; id.Project != pd[0] || id.Domain != pd[1] {
			t.Errorf("%v got an event of %v", pd, id)
		}
		_, _, snap := subscribe(t, s, pd[0], pd[1], nil)
		if len(snap) != 1 || snap[0].ID != (RunID{pd[0], pd[1], "same-run"}) {
			t.Errorf("%v: snapshot %v, want only its own run", pd, snap)
		}
	}
}

func TestConcurrentNotifications(t *testing.T) {
	const workers, perWorker = 4, 25
	s := New(journal.Config{})
	notify(t, s, rec(act("a0", running, 11)))
	sub, _, _ := subscribe(t, s, proj, dom, nil)

	// Readers run alongside so that -race sees them against the writers.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-sub.Ready():
				sub.Drain(nil)
			case <-stop:
				return
			}
			s.List(proj, dom)
			other, _, _ := s.Subscribe(proj, dom, nil)
			other.Close()
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				name := fmt.Sprintf("w%d-%d", w, i)
				// Each action's steps arrive in order; only actions interleave.
				for _, n := range []note{
					rec(act(name, queued, 20)), upd(act(name, running, 21)),
					upd(act(name, succeeded, 22)), upd(act(name, succeeded, 22)),
				} {
					if err := n.send(s); err != nil {
						t.Error(err) // not Fatal: this is not the test goroutine
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()

	n := workers * perWorker
	want := fmt.Sprintf("RUNNING n=%d RUNNING:1 SUCCEEDED:%d start=10 end=-", n+1, n)
	if got := get(t, s, run); got != want {
		t.Errorf("summary %q\n   want %q", got, want)
	}
}

// Deleting a run's last action deletes the run: Get no longer finds it, and
// the stream says so.
func TestRunGoesWithItsLastAction(t *testing.T) {
	s := New(journal.Config{})
	sub, _, _ := subscribe(t, s, proj, dom, nil)
	notify(t, s, rec(act("a0", running, 11)), upd(deleted(act("a0", running, 12))))
	if sum, ok := s.Get(run); ok {
		t.Errorf("the run of a deleted action: %s", describe(sum))
	}
	// Pending events of one run coalesce: the reader gets the latest.
	evs := drain(t, sub)
	if len(evs) == 0 || !evs[len(evs)-1].Value.Deleted {
		t.Errorf("events %v, want the run's deletion last", evs)
	}
	if got := s.List(proj, dom); len(got) != 0 {
		t.Errorf("List after the deletion: %v", got)
	}
}
