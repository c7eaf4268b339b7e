package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/journal"
)

const (
	proj, dom = "p", "d"
	queued    = v1.PhaseQueued
	running   = v1.PhaseRunning
	succeeded = v1.PhaseSucceeded
	failed    = v1.PhaseFailed
)

var (
	t0  = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	run = v1.RunID{Project: proj, Domain: dom, Run: "r1"}
)

// at turns the small integers of the tables into times.
func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// act is the first incarnation of an action of run r1. "a0" is the root,
// created at 10; children are created at 20, so StartedAt shows whose
// CreatedAt was taken.
func act(name string, ph v1.Phase, updated int) Action {
	a := Action{Project: proj, Domain: dom, Run: run.Run, Name: name, UID: name + "#1",
		Phase: ph, CreatedAt: at(20), UpdatedAt: at(updated), View: json.RawMessage(`{}`)}
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

// deleted is the notification that the object left the control plane.
func deleted(a Action) Action { a.Deleted = true; return a }

func rootOf(project, domain, runName string, ph v1.Phase, created int) Action {
	a := act("a0", ph, created)
	a.Project, a.Domain, a.Run, a.CreatedAt = project, domain, runName, at(created)
	return a
}

// newService is a service over a new store in its own dir.
func newService(t *testing.T) *Service {
	t.Helper()
	return New(openStore(t, t.TempDir()), journal.Config{}, zerolog.Nop())
}

// openStore opens the history store in dir, closed when the test ends.
func openStore(t *testing.T, dir string) *history.Store {
	t.Helper()
	st, err := history.Open(context.Background(), "", dir)
	if err != nil {
		t.Fatalf("history.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A note is one call of the manager (or of the API) into the service.
type note func(*Service) error

func rec(a Action) note {
	return func(s *Service) error { return s.RecordAction(context.Background(), a) }
}

func upd(a Action) note {
	return func(s *Service) error { return s.UpdateActionStatus(context.Background(), a) }
}

func notify(t *testing.T, s *Service, notes ...note) {
	t.Helper()
	for _, n := range notes {
		if err := n(s); err != nil {
			t.Fatal(err)
		}
	}
}

// describe renders a summary in the tables' terms, counts in alphabetical
// phase order, times in seconds after t0.
func describe(s Summary) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s n=%d", s.Phase, s.ActionCount)
	for _, p := range slices.Sorted(maps.Keys(s.PhaseCounts)) {
		fmt.Fprintf(&b, " %s:%d", p, s.PhaseCounts[p])
	}
	end := "-"
	if s.EndedAt != nil {
		end = fmt.Sprint(int(s.EndedAt.Sub(t0) / time.Second))
	}
	fmt.Fprintf(&b, " start=%d end=%s", int(s.StartedAt.Sub(t0)/time.Second), end)
	return b.String()
}

// render is an event as a stream client reads it.
func render(e journal.Entry[*Event]) string {
	if e.Value.Deleted {
		return e.Key + " deleted " + string(e.Value.Summary.Phase)
	}
	return e.Key + " " + describe(e.Value.Summary)
}

// drainEntries returns what the subscription has pending, going through
// Ready as a stream handler would.
func drainEntries(t *testing.T, sub *journal.Subscription[*Event]) []journal.Entry[*Event] {
	t.Helper()
	select {
	case <-sub.Ready():
	default:
		return nil
	}
	es, lagged := sub.Drain(nil)
	if lagged {
		t.Fatal("subscription lagged")
	}
	return es
}

// drain is drainEntries rendered.
func drain(t *testing.T, sub *journal.Subscription[*Event]) (out []string) {
	t.Helper()
	for _, e := range drainEntries(t, sub) {
		out = append(out, render(e))
	}
	return out
}

func subscribe(t *testing.T, s *Service, project, domain string, after *uint64) (*journal.Subscription[*Event], journal.Start[*Event], []Summary) {
	sub, start, snap := s.Subscribe(context.Background(), project, domain, after)
	t.Cleanup(sub.Close)
	return sub, start, snap
}

func get(t *testing.T, s *Service, id v1.RunID) string {
	t.Helper()
	sum, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%v): %v", id, err)
	}
	return describe(sum)
}

func wantNotFound(t *testing.T, s *Service, ids ...v1.RunID) {
	t.Helper()
	for _, id := range ids {
		if sum, err := s.Get(context.Background(), id); !errors.Is(err, history.ErrNotFound) {
			t.Errorf("Get(%v) = %q, %v; want ErrNotFound", id, describe(sum), err)
		}
	}
}

// listed is the first page of the runs of proj/dom, newest first.
func listed(t *testing.T, s *Service) []string {
	t.Helper()
	sums, _, err := s.List(context.Background(), history.RunQuery{Project: proj, Domain: dom})
	if err != nil {
		t.Fatal(err)
	}
	return described(sums)
}

// described is runs named and described, in order.
func described(sums []Summary) []string {
	out := []string{}
	for _, sum := range sums {
		out = append(out, sum.ID.Run+" "+describe(sum))
	}
	return out
}

type summaryCase struct {
	name       string
	notes      []note
	want       string // r1's summary after the notes
	wantEvents int    // one per notification that changed the summary
}

func summaryCases() []summaryCase {
	tests := []summaryCase{
		{"root and children", []note{
			rec(act("a0", queued, 10)), rec(act("a1", queued, 11)), rec(act("a2", queued, 11)),
			upd(act("a1", running, 12)), upd(act("a0", running, 12)),
		}, "RUNNING n=3 QUEUED:1 RUNNING:2 start=10 end=-", 5},
		{"no root yet", []note{rec(act("a1", running, 12))}, "UNSPECIFIED n=1 RUNNING:1 start=20 end=-", 1},
		{"terminal child does not end the run", []note{rec(act("a0", running, 11)), rec(act("a1", failed, 14))},
			"RUNNING n=2 FAILED:1 RUNNING:1 start=10 end=-", 2},
		{"terminal kept against a later non-terminal", []note{rec(act("a0", succeeded, 15)), upd(act("a0", running, 16))},
			"SUCCEEDED n=1 SUCCEEDED:1 start=10 end=15", 1},
		{"terminal kept against a later terminal", []note{rec(act("a0", succeeded, 15)), upd(act("a0", failed, 16))},
			"SUCCEEDED n=1 SUCCEEDED:1 start=10 end=15", 1},
		{"older update ignored", []note{rec(act("a0", running, 15)), upd(act("a0", v1.PhaseInitializing, 12))},
			"RUNNING n=1 RUNNING:1 start=10 end=-", 1},
		// The manager's RecordAction may lose the race to a status update.
		{"update before record", []note{upd(act("a0", running, 12)), rec(act("a0", queued, 10))},
			"RUNNING n=1 RUNNING:1 start=10 end=-", 1},
		// History keeps what left the control plane: retired actions count.
		{"retired action still counts", []note{
			rec(act("a0", running, 11)), rec(act("a1", running, 12)), upd(deleted(act("a1", running, 13))),
		}, "RUNNING n=2 RUNNING:2 start=10 end=-", 2},
		{"retirement carries the last phase", []note{
			rec(act("a0", running, 11)), rec(act("a1", running, 12)), upd(deleted(act("a1", succeeded, 13))),
		}, "RUNNING n=2 RUNNING:1 SUCCEEDED:1 start=10 end=-", 3},
		{"retired root ends the run", []note{rec(act("a0", running, 11)), upd(deleted(act("a0", failed, 15)))},
			"FAILED n=1 FAILED:1 start=10 end=15", 2},
		{"retirement of an older incarnation ignored", []note{
			rec(act("a0", running, 11)), rec(incarnation(act("a1", running, 31), "a1#2", 30)),
			upd(deleted(act("a1", succeeded, 40))),
		}, "RUNNING n=2 RUNNING:2 start=10 end=-", 2},
		{"retirement of an unseen newer incarnation recorded", []note{
			rec(act("a0", running, 11)), rec(act("a1", running, 12)),
			upd(deleted(incarnation(act("a1", succeeded, 40), "a1#2", 30))),
		}, "RUNNING n=2 RUNNING:1 SUCCEEDED:1 start=10 end=-", 3},
		{"newer incarnation replaces", []note{
			rec(act("a0", running, 11)), rec(act("a1", failed, 14)), rec(incarnation(act("a1", queued, 30), "a1#2", 30)),
		}, "RUNNING n=2 QUEUED:1 RUNNING:1 start=10 end=-", 3},
		{"older incarnation ignored", []note{
			rec(act("a0", running, 11)), rec(incarnation(act("a1", running, 31), "a1#2", 30)), upd(act("a1", succeeded, 40)),
		}, "RUNNING n=2 RUNNING:2 start=10 end=-", 2},
		// A new root object is a new lifetime of the run: the old end goes.
		{"newer root incarnation is not ended", []note{
			rec(act("a0", succeeded, 15)), rec(incarnation(act("a0", running, 31), "a0#2", 30)),
		}, "RUNNING n=1 RUNNING:1 start=30 end=-", 2},
	}
	for _, p := range []v1.Phase{succeeded, failed, v1.PhaseAborted, v1.PhaseTimedOut, v1.PhaseRecovered} {
		tests = append(tests, summaryCase{"root " + string(p) + " ends the run", []note{
			rec(act("a0", running, 11)), rec(act("a1", running, 12)), upd(act("a1", p, 14)), upd(act("a0", p, 15)),
		}, fmt.Sprintf("%s n=2 %s:2 start=10 end=15", p, p), 4})
	}
	return tests
}

func TestSummary(t *testing.T) {
	for _, tt := range summaryCases() {
		t.Run(tt.name, func(t *testing.T) {
			s := newService(t)
			sub, _, _ := subscribe(t, s, proj, dom, nil)
			var events []string
			for _, n := range tt.notes {
				notify(t, s, n)
				events = append(events, drain(t, sub)...)
			}
			got := get(t, s, run)
			if got != tt.want {
				t.Errorf("summary = %q\n            want %q", got, tt.want)
			}
			if len(events) != tt.wantEvents || events[len(events)-1] != "r1 "+got {
				t.Errorf("events %q, want %d, the last one %q", events, tt.wantEvents, got)
			}
		})
	}
}

// Notifications seen again (a restart, a re-list) change nothing and
// publish nothing.
func TestIdempotent(t *testing.T) {
	for _, tt := range summaryCases() {
		t.Run(tt.name, func(t *testing.T) {
			s := newService(t)
			notify(t, s, tt.notes...)
			first := get(t, s, run)
			sub, _, _ := subscribe(t, s, proj, dom, nil)
			notify(t, s, tt.notes...)
			if evs := drain(t, sub); len(evs) != 0 {
				t.Errorf("repeat published %q", evs)
			}
			if got := get(t, s, run); got != first {
				t.Errorf("repeat changed the summary from %q to %q", first, got)
			}
		})
	}
}

// Restore fills a new store from what the control plane holds, so it must
// land where the live notifications landed.
func TestRestore(t *testing.T) {
	notified, restored := newService(t), newService(t)
	notify(t, notified, rec(act("a0", queued, 10)), rec(act("a1", queued, 11)), upd(act("a1", succeeded, 13)),
		rec(act("a2", running, 12)), upd(act("a0", failed, 15)), rec(rootOf(proj, dom, "r2", running, 5)))
	if !restored.Store().Created {
		t.Fatal("a store opened in an empty dir is not Created")
	}
	final := []Action{act("a1", succeeded, 13), act("a0", failed, 15), act("a2", running, 12), rootOf(proj, dom, "r2", running, 5)}
	if err := restored.Restore(t.Context(), func() []Action { return final }); err != nil {
		t.Fatal(err)
	}
	if got, want := listed(t, restored), listed(t, notified); !slices.Equal(got, want) {
		t.Errorf("restored %q\n  notified %q", got, want)
	}
	if g := get(t, restored, run); g != "FAILED n=3 FAILED:1 RUNNING:1 SUCCEEDED:1 start=10 end=15" {
		t.Errorf("restored r1 = %q", g)
	}
}

func TestSummaryPersistsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	st := openStore(t, dir)
	first := New(st, journal.Config{}, zerolog.Nop())
	notify(t, first, rec(act("a0", running, 11)), rec(act("a1", running, 12)), upd(act("a1", failed, 14)),
		rec(rootOf(proj, dom, "r2", succeeded, 30)), upd(deleted(rootOf(proj, dom, "r2", succeeded, 30))))
	want := listed(t, first)
	if !slices.Equal(want, []string{"r2 SUCCEEDED n=1 SUCCEEDED:1 start=30 end=30", "r1 RUNNING n=2 FAILED:1 RUNNING:1 start=10 end=-"}) {
		t.Fatalf("before reopen: %q", want)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	s := New(openStore(t, dir), journal.Config{}, zerolog.Nop())
	if s.Store().Created {
		t.Fatal("the reopened store says it was just created")
	}
	if got := listed(t, s); !slices.Equal(got, want) {
		t.Errorf("after reopen %q\n      before %q", got, want)
	}
	if g := get(t, s, run); "r1 "+g != want[1] {
		t.Errorf("Get(r1) after reopen = %q", g)
	}
	// History already has what the control plane holds: Restore records
	// nothing, neither a run it never saw nor a change to a known one.
	if err := s.Restore(t.Context(), func() []Action { return []Action{rootOf(proj, dom, "never", running, 40), act("a0", succeeded, 50)} }); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, s, v1.RunID{Project: proj, Domain: dom, Run: "never"})
	if got := listed(t, s); !slices.Equal(got, want) {
		t.Errorf("after Restore %q\n         want %q", got, want)
	}
}

// Epochs keep a cursor from a previous process (whose counter restarted)
// from resuming into the wrong history.
func TestCursorOfAnotherService(t *testing.T) {
	a, b := newService(t), newService(t)
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
	s := newService(t)
	subs := map[[2]string]*journal.Subscription[*Event]{}
	for _, pd := range pairs {
		subs[pd], _, _ = subscribe(t, s, pd[0], pd[1], nil)
	}
	for _, pd := range pairs {
		notify(t, s, rec(rootOf(pd[0], pd[1], "same-run", running, 10)))
	}
	for _, pd := range pairs {
		// The key is the run's name alone: the topic must keep them apart.
		if evs := drain(t, subs[pd]); len(evs) != 1 {
			t.Errorf("%v: events %q, want its own one", pd, evs)
		}
		if _, _, snap := subscribe(t, s, pd[0], pd[1], nil); len(snap) != 1 || snap[0].ID != (v1.RunID{Project: pd[0], Domain: pd[1], Run: "same-run"}) {
			t.Errorf("%v: snapshot %v, want only its own run", pd, snap)
		}
	}
}

func TestConcurrentNotifications(t *testing.T) {
	const workers, perWorker = 4, 15
	s := newService(t)
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
			if _, _, err := s.List(context.Background(), history.RunQuery{Project: proj, Domain: dom}); err != nil {
				t.Error(err)
			}
			other, _, _ := s.Subscribe(context.Background(), proj, dom, nil)
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
					if err := n(s); err != nil {
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

// Actions leaving the control plane leave their run in history; only a
// deletion through the API removes it, and the stream says so.
func TestDeleteRun(t *testing.T) {
	ctx := t.Context()
	s := newService(t)
	sub, _, _ := subscribe(t, s, proj, dom, nil)
	notify(t, s, rec(act("a0", running, 11)), rec(act("a1", running, 12)),
		upd(deleted(act("a1", succeeded, 13))), upd(deleted(act("a0", succeeded, 15))))
	if g := get(t, s, run); g != "SUCCEEDED n=2 SUCCEEDED:2 start=10 end=15" {
		t.Errorf("run of retired actions = %q", g)
	}
	// Pending events of one run coalesce: the reader gets the latest.
	if evs := drain(t, sub); !slices.Equal(evs, []string{"r1 SUCCEEDED n=2 SUCCEEDED:2 start=10 end=15"}) {
		t.Errorf("retirement published %q, want the ended run", evs)
	}

	if existed, err := s.DeleteRun(ctx, run, nil); err != nil || !existed {
		t.Fatalf("DeleteRun = %v, %v; want true", existed, err)
	}
	wantNotFound(t, s, run)
	if got := listed(t, s); len(got) != 0 {
		t.Errorf("List after DeleteRun: %q", got)
	}
	if evs := drain(t, sub); !slices.Equal(evs, []string{"r1 deleted SUCCEEDED"}) { // its last summary, not a blank one
		t.Errorf("events %q, want r1's deletion", evs)
	}
	// Late events of the deleted objects do not bring the run back; there
	// is nothing left to delete.
	notify(t, s, upd(act("a0", succeeded, 16)), upd(deleted(act("a1", succeeded, 17))))
	wantNotFound(t, s, run)
	if existed, err := s.DeleteRun(ctx, run, nil); err != nil || existed {
		t.Errorf("DeleteRun again = %v, %v; want false", existed, err)
	}
	if evs := drain(t, sub); len(evs) != 0 {
		t.Errorf("late events and a second DeleteRun published %q", evs)
	}

	// Live actions history has not seen yet: the run existed, and their
	// events, arriving after, are refused.
	r2 := v1.RunID{Project: proj, Domain: dom, Run: "r2"}
	if existed, err := s.DeleteRun(ctx, r2, []Action{rootOf(proj, dom, "r2", queued, 20)}); err != nil || !existed {
		t.Fatalf("DeleteRun with live actions = %v, %v; want true", existed, err)
	}
	if evs := drain(t, sub); !slices.Equal(evs, []string{"r2 deleted UNSPECIFIED"}) { // history never saw it
		t.Errorf("events %q, want r2's deletion", evs)
	}
	notify(t, s, rec(rootOf(proj, dom, "r2", running, 20)))
	wantNotFound(t, s, r2)

	// A new object under the name starts the run again.
	notify(t, s, rec(incarnation(act("a0", queued, 40), "a0#2", 40)))
	if g := get(t, s, run); g != "QUEUED n=1 QUEUED:1 start=40 end=-" {
		t.Errorf("new incarnation after DeleteRun = %q", g)
	}
}
