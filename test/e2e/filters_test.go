package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"taskactions/pkg/client"
)

// A client of a large run asks for what it shows: the run's list and its
// stream, filtered by phase and by a part of the name, paged over what
// matches; the filtered stream also sends the change that takes an action
// out of the filter, and nothing of the actions it never matched. It reads
// better whole: one run, listed and then streamed as a client would.
func TestRunFilteredByPhaseAndName(t *testing.T) {
	ctx := context.Background()
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	for i := range 6 {
		enqueue(t, srv, run, fmt.Sprintf("child-%d", i), "a0")
	}
	enqueue(t, srv, run, "other", "a0")
	for _, name := range []string{"child-0", "child-1", "child-2", "other"} {
		putStatus(t, srv, run, name, 1, client.RUNNING)
	}
	putStatus(t, srv, run, "child-3", 1, client.FAILED)
	putStatus(t, srv, run, "child-4", 1, client.FAILED)

	list := func(p client.ListRunActionsParams) ([]string, string) {
		t.Helper()
		resp, err := srv.api.ListRunActionsWithResponse(ctx, run.Project, run.Domain, run.Name, &p)
		if err != nil || resp.StatusCode() != http.StatusOK {
			t.Fatalf("list %+v: %v %s", p, err, resp.Body)
		}
		var names []string
		for _, a := range resp.JSON200.Items {
			names = append(names, a.ActionId.Name)
		}
		return names, value(resp.JSON200.Continue)
	}
	phases := func(ps ...client.Phase) *client.ActionPhaseParam { return &ps }
	for _, c := range []struct {
		name string
		p    client.ListRunActionsParams
		want string
	}{
		{"failed", client.ListRunActionsParams{Phase: phases(client.FAILED)}, "child-3 child-4"},
		{"two phases", client.ListRunActionsParams{Phase: phases(client.FAILED, client.QUEUED)}, "a0 child-3 child-4 child-5"},
		{"a name, any case", client.ListRunActionsParams{Q: ptr("CHILD-")}, "child-0 child-1 child-2 child-3 child-4 child-5"},
		{"phase and name", client.ListRunActionsParams{Phase: phases(client.RUNNING), Q: ptr("child")}, "child-0 child-1 child-2"},
		{"nothing matches", client.ListRunActionsParams{Q: ptr("nobody")}, ""},
	} {
		if got, _ := list(c.p); strings.Join(got, " ") != c.want {
			t.Errorf("%s: %v, want %s", c.name, got, c.want)
		}
	}
	// Pages are cut from what matches: RUNNING is a0's four children.
	var paged []string
	p := client.ListRunActionsParams{Phase: phases(client.RUNNING), Limit: ptr(client.LimitParam(3))}
	for pages := 0; ; pages++ {
		names, next := list(p)
		if len(names) > 3 || pages > 2 {
			t.Fatalf("page %d: %v", pages, names)
		}
		paged = append(paged, names...)
		if next == "" {
			break
		}
		p.Continue = &next
	}
	if got := strings.Join(paged, " "); got != "child-0 child-1 child-2 other" {
		t.Errorf("RUNNING, 3 a page: %s", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := srv.api.StreamRunEvents(ctx, run.Project, run.Domain, run.Name, &client.RunStreamOptions{Phase: []client.Phase{client.RUNNING}, Q: "child"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var snap []string
	for {
		e, err := s.Next()
		if err != nil {
			t.Fatalf("the filtered snapshot, before synced: %v", err)
		}
		if e.Item != nil {
			snap = append(snap, e.Item.ActionId.Name)
		}
		if e.Synced != nil {
			if strings.Join(snap, " ") != "child-0 child-1 child-2" || e.Synced.Count != 3 {
				t.Fatalf("the filtered snapshot: %v, then synced with count %d", snap, e.Synced.Count)
			}
			break
		}
	}
	putStatus(t, srv, run, "child-5", 1, client.RUNNING)   // comes in
	putStatus(t, srv, run, "child-0", 1, client.SUCCEEDED) // goes out: sent, to be dropped
	putStatus(t, srv, run, "other", 1, client.SUCCEEDED)   // never matched the name: not sent
	putStatus(t, srv, run, "child-3", 1, client.FAILED)    // a repeat: no change
	putStatus(t, srv, run, "child-1", 2, client.RUNNING)   // a change that matches
	var live []string
	for len(live) < 3 {
		e, err := s.Next()
		if err != nil {
			t.Fatalf("live events of the filtered stream after %v: %v", live, err)
		}
		if e.Item != nil {
			live = append(live, e.Item.ActionId.Name+":"+string(e.Item.Phase))
		}
	}
	if got := strings.Join(live, " "); got != "child-5:RUNNING child-0:SUCCEEDED child-1:RUNNING" {
		t.Errorf("live events of the filtered stream: %s", got)
	}
}

func ptr[T any](v T) *T { return &v }
