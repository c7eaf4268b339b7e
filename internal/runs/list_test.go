package runs

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/journal"
)

func TestListAndGet(t *testing.T) {
	s := newService(t)
	notify(t, s,
		rec(rootOf(proj, dom, "old", running, 10)), rec(rootOf(proj, dom, "new", running, 30)),
		rec(rootOf(proj, dom, "mid", failed, 20)),
		rec(rootOf(proj, "d2", "other-domain", running, 40)), rec(rootOf("p2", dom, "other-project", running, 50)),
		// Seen only as it left the control plane: history keeps its last state.
		upd(deleted(rootOf(proj, dom, "retired", succeeded, 25))),
	)
	if got, want := listed(t, s), []string{
		"new RUNNING n=1 RUNNING:1 start=30 end=-", "retired SUCCEEDED n=1 SUCCEEDED:1 start=25 end=25",
		"mid FAILED n=1 FAILED:1 start=20 end=20", "old RUNNING n=1 RUNNING:1 start=10 end=-",
	}; !slices.Equal(got, want) {
		t.Errorf("List = %q\n want %q", got, want)
	}
	if g := get(t, s, v1.RunID{Project: proj, Domain: dom, Run: "retired"}); g != "SUCCEEDED n=1 SUCCEEDED:1 start=25 end=25" {
		t.Errorf("Get(retired) = %q", g)
	}
	wantNotFound(t, s, v1.RunID{Project: proj, Domain: dom, Run: "unknown"}, v1.RunID{Project: proj, Domain: dom, Run: "other-domain"}, v1.RunID{Project: "p2", Domain: "d2", Run: "other-project"})
}

func TestListPages(t *testing.T) {
	s := newService(t)
	phases := []v1.Phase{running, failed, succeeded}
	for i := range 25 {
		notify(t, s, rec(rootOf(proj, dom, fmt.Sprintf("r%02d", i), phases[i%3], i+1)))
	}
	// newest is the names of the runs started at i+1 for the i kept, newest first.
	newest := func(keep func(i int) bool) (out []string) {
		for i := 24; i >= 0; i-- {
			if keep(i) {
				out = append(out, fmt.Sprintf("r%02d", i))
			}
		}
		return out
	}
	all := newest(func(int) bool { return true })
	// Runs started at the same time are ordered by name.
	for _, name := range []string{"t-c", "t-a", "t-e", "t-b", "t-d"} {
		notify(t, s, rec(rootOf(proj, "ties", name, running, 7)))
	}
	tests := []struct {
		name  string
		q     history.RunQuery
		want  []string
		pages int
	}{
		{"all", history.RunQuery{Domain: dom, Limit: 10}, all, 3},
		{"failed", history.RunQuery{Domain: dom, Limit: 10, Phases: []string{"FAILED"}},
			newest(func(i int) bool { return i%3 == 1 }), 1},
		{"failed or running", history.RunQuery{Domain: dom, Limit: 10, Phases: []string{"FAILED", "RUNNING"}},
			newest(func(i int) bool { return i%3 != 2 }), 2},
		{"unknown phase", history.RunQuery{Domain: dom, Limit: 10, Phases: []string{"NOT_A_PHASE"}}, nil, 1},
		{"exactly one full page", history.RunQuery{Domain: dom, Limit: 10, StartedAfter: at(6), StartedBefore: at(16)}, all[10:20], 1},
		{"ties", history.RunQuery{Domain: "ties", Limit: 2}, []string{"t-a", "t-b", "t-c", "t-d", "t-e"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.q
			q.Project = proj
			var got []string
			pages := 0
			for {
				sums, next, err := s.List(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				if pages++; pages > 10 || len(sums) > q.Limit {
					t.Fatalf("page %d has %d runs (limit %d)", pages, len(sums), q.Limit)
				}
				for _, sum := range sums {
					got = append(got, sum.ID.Run)
				}
				if next == "" {
					break
				}
				if q.After, err = history.ParseRunKey(next); err != nil {
					t.Fatalf("ParseRunKey(%q): %v", next, err)
				}
			}
			if !slices.Equal(got, tt.want) || pages != tt.pages {
				t.Errorf("%d pages of %v\n want %d of %v", pages, got, tt.pages, tt.want)
			}
		})
	}
}

func TestSubscribe(t *testing.T) {
	s := newService(t)
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
		for _, e := range drainEntries(t, live) {
			if e.Cursor <= cursors[len(cursors)-1] {
				t.Fatalf("cursor %d after %d", e.Cursor, cursors[len(cursors)-1])
			}
			cursors = append(cursors, e.Cursor)
			seen = append(seen, render(e))
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
				got = append(got, render(e))
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

func TestSubscribeSnapshotFromHistory(t *testing.T) {
	st := openStore(t, t.TempDir())
	// Another service (a previous process) wrote these: the snapshot comes
	// from history, not from what this service published.
	notify(t, New(st, journal.Config{}, zerolog.Nop()), rec(rootOf(proj, dom, "r-old", succeeded, 1)),
		rec(rootOf(proj, dom, "r-new", running, 5)), rec(rootOf(proj, "d2", "elsewhere", running, 9)))
	s := New(st, journal.Config{}, zerolog.Nop())
	sub, start, snap := subscribe(t, s, proj, dom, nil)
	got := described(snap)
	if want := []string{"r-new RUNNING n=1 RUNNING:1 start=5 end=-", "r-old SUCCEEDED n=1 SUCCEEDED:1 start=1 end=1"}; start.Resumed || !slices.Equal(got, want) {
		t.Fatalf("resumed=%v, snapshot %q\n want %q", start.Resumed, got, want)
	}

	deleteActions := func(id v1.RunID, name string) note {
		return func(s *Service) error { return s.DeleteActions(t.Context(), id, name, nil) }
	}
	got = nil
	for _, n := range []note{
		rec(act("a0", queued, 10)), rec(act("a1", running, 11)),
		upd(deleted(rootOf(proj, dom, "r-new", failed, 5))), // retired: the run stays
		deleteActions(run, "a1"), deleteActions(v1.RunID{Project: proj, Domain: dom, Run: "r-old"}, "a0"),
	} {
		notify(t, s, n)
		got = append(got, drain(t, sub)...) // drained each time: nothing coalesces
	}
	if want := []string{
		"r1 QUEUED n=1 QUEUED:1 start=10 end=-", "r1 QUEUED n=2 QUEUED:1 RUNNING:1 start=10 end=-",
		"r-new FAILED n=1 FAILED:1 start=5 end=5", "r1 QUEUED n=1 QUEUED:1 start=10 end=-", "r-old deleted SUCCEEDED",
	}; !slices.Equal(got, want) {
		t.Errorf("events %q\n  want %q", got, want)
	}
	wantNotFound(t, s, v1.RunID{Project: proj, Domain: dom, Run: "r-old"})
	if got, want := listed(t, s), []string{
		"r1 QUEUED n=1 QUEUED:1 start=10 end=-", "r-new FAILED n=1 FAILED:1 start=5 end=5",
	}; !slices.Equal(got, want) {
		t.Errorf("List %q\n want %q", got, want)
	}
}
