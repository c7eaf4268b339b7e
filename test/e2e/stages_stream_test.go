package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

// The Stage streams (every Stage of a project; one Stage) and refresh.

func projectStagesStreamURL(project string) string {
	return fmt.Sprintf("%s/api/v1/projects/%s/stage-events", srv.URL(), project)
}

func stageStreamURL(project, name string) string { return stagesURL(project, name, "events") }

// stageEvent is the data of a `stage` event.
type stageEvent struct {
	kargoapi.Stage
	Deleted bool `json:"deleted"`
}

// stageOf decodes a `stage` event, checking that it is one and that its id
// is the Stage's resource version (or 0, in a snapshot).
func stageOf(t testing.TB, ev client.Event) stageEvent {
	t.Helper()
	if ev.Type != "stage" {
		t.Fatalf("%s event %s, want a stage event", ev.Type, ev.Data)
	}
	var s stageEvent
	mustJSON(t, ev.Data, &s)
	if s.APIVersion != "kargo.akuity.io/v1alpha1" || s.Kind != "Stage" || s.Name == "" {
		t.Errorf("stage event data %s", ev.Data)
	}
	if !ev.HasID || (ev.ID != "0" && ev.ID != s.ResourceVersion) {
		t.Errorf("stage event of %s at %s has id %q", s.Name, s.ResourceVersion, ev.ID)
	}
	return s
}

// syncedOf decodes a `synced` event.
func syncedOf(t testing.TB, ev client.Event) client.SyncedEvent {
	t.Helper()
	if ev.Type != "synced" {
		t.Fatalf("%s event %s, want synced", ev.Type, ev.Data)
	}
	var s client.SyncedEvent
	mustJSON(t, ev.Data, &s)
	return s
}

// untilStage reads stage events until one satisfies ok and returns it,
// with every stage event read (ok's included). Each live event must have
// an id above the one before.
func (s *sseStream) untilStage(t testing.TB, what string, last *uint64, ok func(stageEvent) bool) (stageEvent, []stageEvent) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var seen []stageEvent
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("no stage event for %s; saw %d others", what, len(seen))
		}
		ev := s.next(t, left)
		st := stageOf(t, ev)
		if last != nil {
			if c := cursorOf(t, ev.ID); c <= *last {
				t.Fatalf("event id %d after %d", c, *last)
			} else {
				*last = c
			}
		}
		seen = append(seen, st)
		if ok(st) {
			return st, seen
		}
	}
}

// snapshot reads a stream's first events up to synced, checking that it is
// a snapshot (ids 0, synced not resumed, with the count) and returns the
// Stages' names and the synced cursor.
func (s *sseStream) snapshot(t testing.TB, reset bool) ([]string, uint64) {
	t.Helper()
	evs := s.untilSynced(t)
	if reset {
		if evs[0].Type != "reset" || evs[0].ID != "0" || !strings.Contains(string(evs[0].Data), `"reason"`) {
			t.Fatalf("first event %s %q %s, want reset with a reason", evs[0].Type, evs[0].ID, evs[0].Data)
		}
		evs = evs[1:]
	}
	var names []string
	for _, ev := range evs[:len(evs)-1] {
		if ev.ID != "0" {
			t.Errorf("snapshot event with id %q, want 0", ev.ID)
		}
		st := stageOf(t, ev)
		if st.Deleted {
			t.Errorf("snapshot has deleted %s", st.Name)
		}
		names = append(names, st.Name)
	}
	synced := evs[len(evs)-1]
	if sy := syncedOf(t, synced); sy.Resumed || sy.Count != int64(len(names)) {
		t.Errorf("synced %s after a snapshot of %d", synced.Data, len(names))
	}
	slices.Sort(names)
	return names, cursorOf(t, synced.ID)
}

func named(name string) func(stageEvent) bool {
	return func(s stageEvent) bool { return s.Name == name }
}

func refreshStage(t testing.TB, project, name string, wait bool) kargoapi.Stage {
	t.Helper()
	return stageRefresh(t, project, name, wait).stage(t, http.StatusOK)
}

// Refresh with wait answers once the controller handled it; without,
// at once, and the stream shows when it is handled.
func TestStageRefresh(t *testing.T) {
	p := stageProject()
	createStage(t, p, regularStage("r", ""))
	s := openStream(t, srv.http, stageStreamURL(p, "r"), "")
	s.untilSynced(t)

	st := refreshStage(t, p, "r", true)
	token := st.Annotations[kargoapi.AnnotationKeyRefresh]
	if token == "" || st.Status.LastHandledRefresh != token {
		t.Errorf("refresh?wait=true: annotation %q, lastHandledRefresh %q", token, st.Status.LastHandledRefresh)
	}
	if c := condition(st, kargoapi.ConditionTypeReady); c == nil || c.Status != "False" || c.Reason != "NoFreight" {
		t.Errorf("refreshed Stage's Ready: %+v", c)
	}
	if got := getStage(t, p, "r"); got.Status.LastHandledRefresh != token {
		t.Errorf("get after refresh: lastHandledRefresh %q, want %q", got.Status.LastHandledRefresh, token)
	}

	st = refreshStage(t, p, "r", false)
	token2 := st.Annotations[kargoapi.AnnotationKeyRefresh]
	if token2 == "" || token2 == token || st.Status.LastHandledRefresh == token2 {
		t.Errorf("refresh without wait: annotation %q (before %q), lastHandledRefresh %q: want a new annotation, not yet handled",
			token2, token, st.Status.LastHandledRefresh)
	}
	s.untilStage(t, "the handled refresh", nil, func(e stageEvent) bool { return e.Status.LastHandledRefresh == token2 })

	for _, wait := range []bool{false, true} {
		if prob := stageRefresh(t, p, "nope", wait).problem(t, http.StatusNotFound); !strings.Contains(prob.Detail, `Stage "nope" not found`) {
			t.Errorf("refresh of a missing Stage (wait %v): %q", wait, prob.Detail)
		}
	}
}

// A project's stream: the snapshot, synced, then live creates, replaces
// and deletes, ids rising, only this project's Stages.
func TestStageProjectStream(t *testing.T) {
	p := stageProject()
	for _, n := range []string{"c", "a", "b"} {
		createStage(t, p, regularStage(n, ""))
	}
	createStage(t, stageProject(), regularStage("a", "")) // same name, another project

	s := openStream(t, srv.http, projectStagesStreamURL(p), "")
	if h := s.resp.Header; h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache" {
		t.Errorf("stream headers %v", h)
	}
	names, last := s.snapshot(t, false)
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Fatalf("snapshot of %v, want a b c", names)
	}

	d := createStage(t, p, controlFlowStage("d"))
	got, _ := s.untilStage(t, "the new d", &last, named("d"))
	if got.Deleted || got.Namespace != p || got.UID != d.UID {
		t.Errorf("d's event: %+v", got.ObjectMeta)
	}
	// The controller makes d, a control-flow Stage, Ready.
	s.untilStage(t, "d Ready", &last, func(e stageEvent) bool {
		c := condition(e.Stage, kargoapi.ConditionTypeReady)
		return e.Name == "d" && c != nil && c.Status == "True" && e.Status.FreightSummary == "N/A"
	})

	cur := settled(t, p, "a")
	next := cur.DeepCopy()
	next.Spec.Shard = "blue"
	replaced := stageReplace(t, p, "a", mustMarshal(t, next)).stage(t, http.StatusOK)
	s.untilStage(t, "a replaced", &last, func(e stageEvent) bool {
		return e.Name == "a" && e.Generation == replaced.Generation && e.Spec.Shard == "blue" && e.Labels[kargoapi.LabelKeyShard] == "blue"
	})

	if r := stageDelete(t, p, "b"); r.code != http.StatusNoContent {
		t.Fatalf("delete: HTTP %d %s", r.code, r.body)
	}
	_, seen := s.untilStage(t, "b deleted", &last, func(e stageEvent) bool { return e.Name == "b" && e.Deleted })
	for _, e := range seen {
		if e.Namespace != p {
			t.Errorf("project %s's stream has a Stage of %s", p, e.Namespace)
		}
	}
}

// A stream resumed with the id of the last event it received replays
// exactly what it missed; a cursor this server does not cover gets reset
// and a snapshot.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestStageStreamResume(t *testing.T) {
	p := stageProject()
	createStage(t, p, regularStage("a", ""))
	createStage(t, p, regularStage("b", ""))
	settled(t, p, "a")
	settled(t, p, "b")
	// control stays connected throughout: it tells when each change has
	// been published, so that the next starts after it.
	control := openStream(t, srv.http, projectStagesStreamURL(p), "")
	control.untilSynced(t)
	s := openStream(t, srv.http, projectStagesStreamURL(p), "")
	s.untilSynced(t)
	token := refreshStage(t, p, "a", true).Status.LastHandledRefresh
	var cursor string
	for cursor == "" {
		ev := s.next(t, 10*time.Second)
		if e := stageOf(t, ev); e.Name == "a" && e.Status.LastHandledRefresh == token {
			cursor = ev.ID
		}
	}
	control.untilStage(t, "a refreshed", nil, func(e stageEvent) bool { return e.Name == "a" && e.Status.LastHandledRefresh == token })
	s.close()

	// Missed while away, each change settled (its write, then the
	// controller's status) before the next: c created, a replaced, b
	// deleted.
	type want struct {
		name, rv string
		deleted  bool
	}
	var missed []want
	c := createStage(t, p, regularStage("c", ""))
	cs, _ := control.untilStage(t, "c's status", nil, func(e stageEvent) bool {
		return e.Name == "c" && condition(e.Stage, kargoapi.ConditionTypeReady) != nil
	})
	missed = append(missed, want{"c", c.ResourceVersion, false}, want{"c", cs.ResourceVersion, false})

	a := getStage(t, p, "a")
	a.Spec.Shard = "green"
	a = stageReplace(t, p, "a", mustMarshal(t, &a)).stage(t, http.StatusOK)
	as, _ := control.untilStage(t, "a's status for generation 2", nil, func(e stageEvent) bool {
		for _, c := range e.Status.Conditions {
			if e.Name == "a" && c.Type == kargoapi.ConditionTypeReady && c.ObservedGeneration == a.Generation {
				return true
			}
		}
		return false
	})
	missed = append(missed, want{"a", a.ResourceVersion, false}, want{"a", as.ResourceVersion, false})

	if r := stageDelete(t, p, "b"); r.code != http.StatusNoContent {
		t.Fatalf("delete: HTTP %d %s", r.code, r.body)
	}
	control.untilStage(t, "b deleted", nil, func(e stageEvent) bool { return e.Name == "b" && e.Deleted })
	missed = append(missed, want{"b", "", true})

	for _, how := range []string{"Last-Event-ID", "lastEventId"} {
		var r *sseStream
		if how == "Last-Event-ID" {
			r = openStream(t, srv.http, projectStagesStreamURL(p), cursor)
		} else {
			r = openStream(t, srv.http, projectStagesStreamURL(p)+"?lastEventId="+cursor, "")
		}
		evs := r.untilSynced(t)
		var got []want
		last := cursorOf(t, cursor)
		for _, ev := range evs[:len(evs)-1] {
			e := stageOf(t, ev)
			if c := cursorOf(t, ev.ID); c <= last {
				t.Errorf("%s: replayed id %d after %d", how, c, last)
			} else {
				last = c
			}
			w := want{e.Name, e.ResourceVersion, e.Deleted}
			if e.Deleted {
				w.rv = ""
			}
			got = append(got, w)
		}
		if fmt.Sprint(got) != fmt.Sprint(missed) {
			t.Errorf("%s: resume replayed %v, want exactly the missed %v", how, got, missed)
		}
		synced := evs[len(evs)-1]
		if sy := syncedOf(t, synced); !sy.Resumed || sy.Count != int64(len(got)) {
			t.Errorf("%s: synced %s after a replay of %d", how, synced.Data, len(got))
		}
		if cursorOf(t, synced.ID) < last {
			t.Errorf("%s: synced id %s before the last replayed %d", how, synced.ID, last)
		}
	}

	// Cursors this server does not cover: from before it started, from
	// another process (ahead of anything published here), not a cursor.
	for _, c := range []string{"1", "999999999999", "other-process-7"} {
		r := openStream(t, srv.http, projectStagesStreamURL(p), c)
		if names, _ := r.snapshot(t, true); !slices.Equal(names, []string{"a", "c"}) {
			t.Errorf("cursor %s: snapshot of %v after reset, want a c", c, names)
		}
	}
}

// One Stage's stream: a snapshot of it, then its changes only.
func TestStageOneStream(t *testing.T) {
	p := stageProject()
	createStage(t, p, regularStage("a", ""))
	createStage(t, p, regularStage("b", ""))
	s := openStream(t, srv.http, stageStreamURL(p, "a"), "")
	if names, _ := s.snapshot(t, false); !slices.Equal(names, []string{"a"}) {
		t.Fatalf("snapshot of %v, want a", names)
	}
	// b changes first; a leak would come before a's event.
	b := settled(t, p, "b")
	b.Spec.Shard = "red"
	stageReplace(t, p, "b", mustMarshal(t, &b)).stage(t, http.StatusOK)
	refreshStage(t, p, "b", false)
	createStage(t, p, regularStage("a2", ""))
	token := refreshStage(t, p, "a", false).Annotations[kargoapi.AnnotationKeyRefresh]
	_, seen := s.untilStage(t, "a's handled refresh", nil, func(e stageEvent) bool { return e.Status.LastHandledRefresh == token })
	for _, e := range seen {
		if e.Name != "a" {
			t.Errorf("the stream of a delivered %s", e.Name)
		}
	}
	if r := stageDelete(t, p, "a"); r.code != http.StatusNoContent {
		t.Fatalf("delete: HTTP %d %s", r.code, r.body)
	}
	if e, _ := s.untilStage(t, "a deleted", nil, func(e stageEvent) bool { return e.Deleted }); e.Name != "a" {
		t.Errorf("deleted event of %s", e.Name)
	}

	// A Stage that does not exist yet: an empty snapshot, then it.
	later := openStream(t, srv.http, stageStreamURL(p, "later"), "")
	if names, _ := later.snapshot(t, false); len(names) != 0 {
		t.Fatalf("snapshot of %v, want none", names)
	}
	createStage(t, p, regularStage("later", ""))
	if e, _ := later.untilStage(t, "later created", nil, func(stageEvent) bool { return true }); e.Name != "later" {
		t.Errorf("the stream of later delivered %s", e.Name)
	}
}

func mustMarshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
