package history

import (
	v1 "taskactions/api/v1"

	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestAction(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			want := Action{Project: "p", Domain: "d", Run: "r1", Name: "a", Parent: "r", UID: "ua", Phase: "RUNNING",
				CreatedAt: base.Add(123456789 * time.Nanosecond).In(time.FixedZone("X", 3*3600)),
				UpdatedAt: base.Add(time.Hour + 987654321*time.Nanosecond),
				View:      json.RawMessage("{\"b\": [1, 2,  3],\n \"a\":\"é\\u00e9 ?\" , \"n\":1.50}")}
			record(t, s, want)
			got, err := s.Action(ctx, rid, "a")
			if err != nil {
				t.Fatal(err)
			}
			if string(got.View) != string(want.View) {
				t.Errorf("View = %q, want %q byte for byte", got.View, want.View)
			}
			if got.CreatedAt.UnixNano() != want.CreatedAt.UnixNano() || got.UpdatedAt.UnixNano() != want.UpdatedAt.UnixNano() {
				t.Errorf("times = %v, %v; want %v, %v to the nanosecond", got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
			}
			got.CreatedAt, got.UpdatedAt, got.View = want.CreatedAt, want.UpdatedAt, want.View
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Action = %+v, want %+v", got, want)
			}
			for _, c := range []struct {
				id   v1.RunID
				name string
			}{{rid, "nope"}, {v1.RunID{Project: "p", Domain: "d", Run: "nope"}, "a"}, {v1.RunID{Project: "p", Domain: "other", Run: "r1"}, "a"}} {
				_, err := s.Action(ctx, c.id, c.name)
				wantNotFound(t, fmt.Sprintf("Action(%v, %s)", c.id, c.name), err)
			}
			_, err = s.Run(ctx, v1.RunID{Project: "p", Domain: "d", Run: "nope"})
			wantNotFound(t, "Run(unknown)", err)
		})
	}
}

func TestActions(t *testing.T) {
	// Recorded in no particular order; ties of CreatedAt go by name.
	tree := []struct {
		name, parent string
		created      int
	}{{"r", "", 0}, {"c", "r", 1}, {"b", "r", 1}, {"a", "r", 2}, {"b2", "b", 2}, {"b1", "b", 1},
		{"d", "r", 3}, {"c1", "c", 3}, {"a1", "a", 3}, {"e", "r", 4}, {"b3", "b", 4}, {"f", "r", 5}}
	parent := func(p string) *string { return &p }
	cases := []struct {
		name   string
		parent *string
		want   string
	}{
		{"all", nil, "r b b1 c a b2 a1 c1 d b3 e f"},
		{"children of the root", parent("r"), "b c a d e f"},
		{"children of b", parent("b"), "b1 b2 b3"},
		{"roots", parent(""), "r"},
		{"children of a leaf", parent("f"), ""},
	}
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			for _, n := range tree {
				record(t, s, act(rid, n.name, n.parent, "u"+n.name, "RUNNING", n.created, n.created))
			}
			record(t, s, act(v1.RunID{Project: "p", Domain: "d", Run: "other"}, "x", "", "ux", "RUNNING", 0, 0),
				act(v1.RunID{Project: "p", Domain: "d2", Run: "r1"}, "y", "", "uy", "RUNNING", 0, 0))
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					all := allActions(t, s, ActionQuery{Run: rid, Parent: c.parent})
					if got := strings.Join(names(all), " "); got != c.want {
						t.Fatalf("Actions = %q, want %q", got, c.want)
					}
					for _, limit := range []int{1, 2, 5, 12, 100} {
						paged := pageActions(t, s, ActionQuery{Run: rid, Parent: c.parent, Limit: limit})
						if got := strings.Join(names(paged), " "); got != c.want {
							t.Errorf("limit %d: pages = %q, want %q", limit, got, c.want)
						}
					}
				})
			}
		})
	}
}

func TestRuns(t *testing.T) {
	// Runs a..g, newest first g f d e b c a (ties by name), recorded in no order.
	fixture := []struct {
		name, phase string
		started     int
	}{{"c", "FAILED", 2}, {"a", "SUCCEEDED", 1}, {"g", "RUNNING", 5}, {"b", "RUNNING", 2},
		{"e", "QUEUED", 3}, {"d", "SUCCEEDED", 3}, {"f", "SUCCEEDED", 4}}
	cases := []struct {
		name string
		q    RunQuery
		want string
	}{
		{"all", RunQuery{}, "g f d e b c a"},
		{"one phase", RunQuery{Phases: []string{"SUCCEEDED"}}, "f d a"},
		{"two phases", RunQuery{Phases: []string{"SUCCEEDED", "FAILED"}}, "f d c a"},
		{"started after (inclusive)", RunQuery{StartedAfter: at(3)}, "g f d e"},
		{"started before (exclusive)", RunQuery{StartedBefore: at(3)}, "b c a"},
		{"between", RunQuery{StartedAfter: at(2), StartedBefore: at(4)}, "d e b c"},
		{"phase and time", RunQuery{Phases: []string{"RUNNING"}, StartedAfter: at(2)}, "g b"},
		{"after a key", RunQuery{After: &RunKey{at(3), "d"}}, "e b c a"},
		{"limit", RunQuery{Limit: 3}, "g f d"},
		{"nothing", RunQuery{Phases: []string{"ABORTED"}}, ""},
	}
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			for _, r := range fixture {
				id := v1.RunID{Project: "p", Domain: "d", Run: r.name}
				record(t, s, act(id, "root", "", "u"+r.name, r.phase, r.started, r.started+1),
					act(id, "x", "root", "x"+r.name, "RUNNING", r.started, r.started))
			}
			record(t, s, act(v1.RunID{Project: "p", Domain: "other", Run: "z"}, "root", "", "uz", "RUNNING", 3, 3))
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					c.q.Project, c.q.Domain = "p", "d"
					rs, err := s.Runs(ctx, c.q)
					if err != nil {
						t.Fatal(err)
					}
					if got := strings.Join(runNames(rs), " "); got != c.want {
						t.Errorf("Runs = %q, want %q", got, c.want)
					}
				})
			}
			for _, phases := range [][]string{nil, {"SUCCEEDED"}} {
				all, err := s.Runs(ctx, RunQuery{Project: "p", Domain: "d", Phases: phases})
				if err != nil {
					t.Fatal(err)
				}
				for _, limit := range []int{1, 2, 3, 7} {
					paged := pageRuns(t, s, RunQuery{Project: "p", Domain: "d", Phases: phases, Limit: limit}, nil)
					if got, want := strings.Join(runNames(paged), " "), strings.Join(runNames(all), " "); got != want {
						t.Errorf("phases %v limit %d: pages = %q, want %q", phases, limit, got, want)
					}
				}
			}
		})
	}
}

// Keyset paging: runs that start while a client pages (newer than its
// position) neither shift an old run into the next page twice nor out.
func TestRunsPagingWhileRecording(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			seen := map[string]int{}
			for i := range 30 { // pairs share a StartedAt
				id := v1.RunID{Project: "p", Domain: "d", Run: fmt.Sprintf("old%02d", i)}
				record(t, s, act(id, "root", "", id.Run, "RUNNING", i/2, i/2))
				seen[id.Run] = 0
			}
			added := 0
			more := func() { // three new runs, newer than any, between two pages
				for range 3 {
					id := v1.RunID{Project: "p", Domain: "d", Run: fmt.Sprintf("new%02d", added)}
					record(t, s, act(id, "root", "", id.Run, "RUNNING", 100+added, 100+added))
					added++
				}
			}
			for _, r := range pageRuns(t, s, RunQuery{Project: "p", Domain: "d", Limit: 7}, more) {
				if _, old := seen[r.ID.Run]; !old {
					t.Errorf("run %s, started after paging began, is in a later page", r.ID.Run)
				}
				seen[r.ID.Run]++
			}
			if added == 0 {
				t.Error("no runs were recorded while paging")
			}
			for name, n := range seen {
				if n != 1 {
					t.Errorf("run %s seen %d times, want once", name, n)
				}
			}
		})
	}
}

func TestTokens(t *testing.T) {
	times := []time.Time{at(0), base.Add(123456789 * time.Nanosecond), base.In(time.FixedZone("X", -5*3600)).Add(time.Nanosecond),
		time.Date(1960, 6, 1, 0, 0, 0, 7, time.UTC), time.Unix(0, 0)}
	for i, tm := range times {
		name := []string{"a", "run with spaces/é", `"quoted"`, "x", "0"}[i]
		rk, err := ParseRunKey(RunKey{tm, name}.Token())
		if err != nil || !rk.StartedAt.Equal(tm) || rk.Run != name {
			t.Errorf("RunKey{%v, %q} round trip = %+v, %v", tm, name, rk, err)
		}
		ak, err := ParseActionKey(ActionKey{tm, name}.Token())
		if err != nil || !ak.CreatedAt.Equal(tm) || ak.Name != name {
			t.Errorf("ActionKey{%v, %q} round trip = %+v, %v", tm, name, ak, err)
		}
	}
	b64 := base64.RawURLEncoding.EncodeToString
	for _, bad := range []string{"", "xyz", "!!!!", b64([]byte("{}")), b64([]byte(`{"t":1}`)), b64([]byte(`{"t":"x","n":"a"}`)), b64([]byte("null"))} {
		if k, err := ParseRunKey(bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("ParseRunKey(%q) = %+v, %v; want ErrBadToken", bad, k, err)
		}
		if k, err := ParseActionKey(bad); !errors.Is(err, ErrBadToken) {
			t.Errorf("ParseActionKey(%q) = %+v, %v; want ErrBadToken", bad, k, err)
		}
	}
}
