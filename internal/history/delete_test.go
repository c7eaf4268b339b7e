package history

import (
	v1 "taskactions/api/v1"

	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDeleteRun(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			root, a, b := act(rid, "r", "", "ur", "RUNNING", 0, 1), act(rid, "a", "r", "ua", "RUNNING", 1, 1), act(rid, "b", "r", "ub", "QUEUED", 2, 2)
			unseen := act(rid, "c", "r", "uc", "QUEUED", 3, 3) // the control plane had it, history not yet
			other := v1.RunID{Project: "p", Domain: "d", Run: "r2"}
			record(t, s, root, a, b, act(other, "r", "", "ur2", "RUNNING", 0, 0))
			if _, existed, err := s.DeleteRun(ctx, rid, []Action{unseen}); err != nil || !existed {
				t.Fatalf("DeleteRun = %v, %v; want true", existed, err)
			}
			checkGone(t, s, rid, "after DeleteRun", "r", "a", "b", "c")
			checkRun(t, "other run", mustRun(t, s, other), other, wantRun{"RUNNING", map[string]int{"RUNNING": 1}, at(0), nil})
			// Late events of the deleted objects, and of one history never saw.
			later := func(a Action, phase string) Action {
				a.Phase, a.UpdatedAt = phase, a.UpdatedAt.Add(time.Minute)
				return a
			}
			for _, late := range []Action{root, later(root, "SUCCEEDED"), later(a, "SUCCEEDED"), b, unseen, later(unseen, "RUNNING")} {
				if _, changed, err := s.Record(ctx, late); err != nil || changed {
					t.Errorf("late Record(%s %s) = changed %v, %v; want ignored", late.Name, late.Phase, changed, err)
				}
			}
			checkGone(t, s, rid, "after late events", "r", "a", "b", "c")
			// A new incarnation of the root is a new run of that name.
			reborn := act(rid, "r", "", "ur-new", "QUEUED", 50, 50)
			record(t, s, reborn)
			checkRun(t, "new incarnation", mustRun(t, s, rid), rid, wantRun{"QUEUED", map[string]int{"QUEUED": 1}, at(50), nil})
			if got := names(allActions(t, s, ActionQuery{Run: rid})); !slices.Equal(got, []string{"r"}) {
				t.Errorf("Actions after new incarnation = %v, want [r]", got)
			}
			if _, existed, err := s.DeleteRun(ctx, v1.RunID{Project: "p", Domain: "d", Run: "nope"}, nil); err != nil || existed {
				t.Errorf("DeleteRun(unknown) = %v, %v; want false, nil", existed, err)
			}
			// Tombstones of a run history never had block its later events.
			never := v1.RunID{Project: "p", Domain: "d", Run: "never"}
			x := act(never, "x", "", "ux", "RUNNING", 0, 0)
			if _, existed, err := s.DeleteRun(ctx, never, []Action{x}); err != nil || existed {
				t.Errorf("DeleteRun(never recorded) = %v, %v; want false, nil", existed, err)
			}
			record(t, s, x)
			checkGone(t, s, never, "late event of a tombstone passed in live", "x")
		})
	}
}

func TestDeleteActions(t *testing.T) {
	cases := []struct {
		name, del string
		want      string // actions left
		counts    map[string]int
		gone      bool
	}{
		{"subtree", "a", "r b", map[string]int{"RUNNING": 1, "QUEUED": 1}, false},
		{"leaf", "a1", "r a b", map[string]int{"RUNNING": 2, "QUEUED": 1}, false},
		{"root", "r", "", map[string]int{}, true},
		{"unknown", "nope", "r a a1 b", map[string]int{"RUNNING": 2, "SUCCEEDED": 1, "QUEUED": 1}, false},
	}
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					id := v1.RunID{Project: "p", Domain: "d", Run: fmt.Sprintf("run%d", i)}
					tree := []Action{act(id, "r", "", "ur", "RUNNING", 0, 1), act(id, "a", "r", "ua", "RUNNING", 1, 1),
						act(id, "a1", "a", "ua1", "SUCCEEDED", 2, 3), act(id, "b", "r", "ub", "QUEUED", 3, 3)}
					record(t, s, tree...)
					run, gone, err := s.DeleteActions(ctx, id, c.del, nil)
					if err != nil || gone != c.gone {
						t.Fatalf("DeleteActions(%s) = gone %v, %v; want gone %v", c.del, gone, err, c.gone)
					}
					if got := strings.Join(names(allActions(t, s, ActionQuery{Run: id})), " "); got != c.want {
						t.Errorf("Actions = %q, want %q", got, c.want)
					}
					if c.gone {
						checkGone(t, s, id, "run deleted by its root", "r", "a", "a1", "b")
						if run.ActionCount != 4 {
							t.Errorf("the gone run's summary counts %d actions, want its last summary's 4", run.ActionCount)
						}
						return
					}
					want := wantRun{"RUNNING", c.counts, at(0), nil}
					checkRun(t, "returned by DeleteActions", run, id, want)
					checkRun(t, "Run", mustRun(t, s, id), id, want)
					// Late events of the deleted actions change nothing.
					for _, a := range tree {
						if !strings.Contains(" "+c.want+" ", " "+a.Name+" ") {
							_, err := s.Action(ctx, id, a.Name)
							wantNotFound(t, "Action "+a.Name, err)
							record(t, s, a)
						}
					}
					checkRun(t, "Run after late events", mustRun(t, s, id), id, want)
				})
			}
			// Tombstones in live block actions history had not seen.
			id := v1.RunID{Project: "p", Domain: "d", Run: "live"}
			late := act(id, "b1", "b", "ub1", "RUNNING", 5, 5)
			record(t, s, act(id, "r", "", "ur", "RUNNING", 0, 0), act(id, "b", "r", "ub", "RUNNING", 1, 1))
			if _, _, err := s.DeleteActions(ctx, id, "b", []Action{late}); err != nil {
				t.Fatal(err)
			}
			record(t, s, late)
			checkRun(t, "after late event of a live tombstone", mustRun(t, s, id), id, wantRun{"RUNNING", map[string]int{"RUNNING": 1}, at(0), nil})
		})
	}
}

func TestPurge(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			old, recent := v1.RunID{Project: "p", Domain: "d", Run: "old"}, v1.RunID{Project: "p", Domain: "d", Run: "recent"}
			oldRoot, recentRoot := act(old, "r", "", "uo", "RUNNING", 0, 0), act(recent, "r", "", "ur", "RUNNING", 0, 0)
			record(t, s, oldRoot, act(old, "a", "r", "uoa", "RUNNING", 1, 1), recentRoot)
			if _, _, err := s.DeleteRun(ctx, old, nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			mid := time.Now()
			time.Sleep(5 * time.Millisecond)
			if _, _, err := s.DeleteRun(ctx, recent, []Action{act(recent, "x", "r", "ux", "QUEUED", 1, 1)}); err != nil {
				t.Fatal(err)
			}
			purge := func(before time.Time, want int64) {
				t.Helper()
				if n, err := s.Purge(ctx, before); err != nil || n != want {
					t.Errorf("Purge(%v) = %d, %v; want %d", before, n, err, want)
				}
			}
			purge(mid.Add(-time.Hour), 0)
			purge(mid, 2) // the old run's two tombstones
			// Purge is for objects long gone from the control plane: once a
			// tombstone is purged, an event of its UID is taken as new and
			// recorded again.
			record(t, s, oldRoot, recentRoot)
			checkRun(t, "old run after purge", mustRun(t, s, old), old, wantRun{"RUNNING", map[string]int{"RUNNING": 1}, at(0), nil})
			checkGone(t, s, recent, "recent run, its tombstones newer than the purge", "r", "x")
			purge(time.Now().Add(time.Minute), 2) // the recent root and the live tombstone
			purge(time.Now().Add(time.Minute), 0)
			record(t, s, recentRoot)
			mustRun(t, s, recent)
		})
	}
}
