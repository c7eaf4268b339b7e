package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"taskactions/pkg/client"
)

// A first view of a large run, through the Go client: a stream with a
// window sends the first actions in the list's order and a continue
// token in synced; the list pages on from it to the rest, none twice and
// none missed; and live events come for every action, in the window or
// not. Then the same with a phase filter.
func TestRunStreamWindow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	names := make([]string, 30)
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", i)
	}
	enqueueMany(t, srv, run, names, "a0", "external")
	for _, n := range []string{"c03", "c17", "c29"} {
		putStatus(t, srv, run, n, 1, client.FAILED)
	}

	all := listAll(t, run, nil)
	if len(all) != 31 {
		t.Fatalf("the run's list: %d actions, want 31", len(all))
	}
	window := func(opts client.RunStreamOptions, list *client.ListRunActionsParams, want []string) *client.Stream[client.StreamEvent[client.ActionEvent]] {
		t.Helper()
		s, err := srv.api.StreamRunEvents(ctx, run.Project, run.Domain, run.Name, &opts)
		if err != nil {
			t.Fatal(err)
		}
		var shown []string
		var synced *client.SyncedEvent
		for synced == nil {
			e, err := s.Next()
			if err != nil {
				t.Fatalf("the windowed snapshot, before synced: %v", err)
			}
			if e.Item != nil {
				shown = append(shown, e.Item.ActionId.Name)
			}
			synced = e.Synced
		}
		if !slices.Equal(shown, want[:min(opts.Window, len(want))]) || synced.Count != int64(len(shown)) {
			t.Fatalf("window %d: %v (count %d), want the first of %v", opts.Window, shown, synced.Count, want)
		}
		if len(want) <= opts.Window {
			if synced.Continue != nil {
				t.Errorf("window %d of %d: synced carries continue %q", opts.Window, len(want), *synced.Continue)
			}
			return s
		}
		if synced.Continue == nil {
			t.Fatalf("window %d of %d: no continue in synced", opts.Window, len(want))
		}
		p := client.ListRunActionsParams{}
		if list != nil {
			p = *list
		}
		p.Continue = synced.Continue
		if got := append(shown, listAll(t, run, &p)...); !slices.Equal(got, want) {
			t.Errorf("window %d, then the list from its continue: %v, want %v", opts.Window, got, want)
		}
		return s
	}

	s := window(client.RunStreamOptions{Window: 10}, nil, all)
	defer s.Close()
	failed := []client.Phase{client.FAILED}
	window(client.RunStreamOptions{Window: 2, Phase: failed}, &client.ListRunActionsParams{Phase: &failed}, []string{"c03", "c17", "c29"}).Close()
	window(client.RunStreamOptions{Window: 5, Phase: failed}, &client.ListRunActionsParams{Phase: &failed}, []string{"c03", "c17", "c29"}).Close()

	// A change far outside the window is sent live.
	putStatus(t, srv, run, "c25", 1, client.RUNNING)
	for {
		e, err := s.Next()
		if err != nil {
			t.Fatalf("live events after the window: %v", err)
		}
		if e.Item != nil && e.Item.ActionId.Name == "c25" && e.Item.Phase == client.RUNNING {
			break
		}
	}
}

// listAll reads a run's list through every page, from p's continue.
func listAll(t *testing.T, run client.RunIdentifier, p *client.ListRunActionsParams) []string {
	t.Helper()
	if p == nil {
		p = &client.ListRunActionsParams{}
	}
	var names []string
	for {
		resp, err := srv.api.ListRunActionsWithResponse(context.Background(), run.Project, run.Domain, run.Name, p)
		if err != nil || resp.StatusCode() != http.StatusOK {
			t.Fatalf("list: %v %s", err, resp.Body)
		}
		for _, a := range resp.JSON200.Items {
			names = append(names, a.ActionId.Name)
		}
		if resp.JSON200.Continue == nil {
			return names
		}
		p.Continue = resp.JSON200.Continue
	}
}
