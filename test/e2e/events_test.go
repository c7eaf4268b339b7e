package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"taskactions/pkg/client"
)

// A run of 1,000 echo actions watched on all three stream kinds: every
// event shows a change a client can see (no two events of an action carry
// the same data), and each action's terminal phase arrives exactly once.
// The server's own writes (finalizers, the terminal-recorded label) are no
// events.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestOneEventPerVisibleChange(t *testing.T) {
	const n = 1000
	run := newRun()
	runStream := openStream(t, srv.http, runStreamURL(srv, run), "")
	runStream.untilSynced(t)
	rootStream := openStream(t, srv.http, actionStreamURL(srv, run, "a0"), "")
	rootStream.untilSynced(t)
	summaries := openStream(t, srv.http, fmt.Sprintf("%s/api/v1/projects/%s/domains/%s/events", srv.URL(), run.Project, run.Domain), "")
	summaries.untilSynced(t)

	enqueueMany(t, srv, run, []string{"a0"}, "", "echo")
	names := make([]string, 0, n-1)
	for i := 1; i < n; i++ {
		names = append(names, fmt.Sprintf("c%d", i))
	}
	enqueueMany(t, srv, run, names, "a0", "echo")

	// Everything SUCCEEDED, and then a moment for the server's own
	// writes that follow (finalizer, label) to come through, if they did.
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		list, err := srv.api.ListRunActionsWithResponse(context.Background(), run.Project, run.Domain, run.Name, nil)
		if err != nil || list.JSON200 == nil {
			t.Fatalf("list: %v", err)
		}
		done := 0
		for _, a := range list.JSON200.Items {
			if a.Phase == client.SUCCEEDED {
				done++
			}
		}
		if done == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d SUCCEEDED", done, n)
		}
	}
	time.Sleep(3 * time.Second)

	for name, s := range map[string]*sseStream{"run": runStream, "action": rootStream} {
		perAction := map[string][][]byte{}
		terminal := map[string]int{}
		total := 0
		for _, ev := range drain(s) {
			if ev.Type != "action" {
				continue
			}
			var a client.ActionEvent
			mustJSON(t, ev.Data, &a)
			id := a.ActionId.Name
			if prev := perAction[id]; len(prev) > 0 && bytes.Equal(prev[len(prev)-1], ev.Data) {
				t.Errorf("%s stream: %s sent twice with the same data", name, id)
			}
			perAction[id] = append(perAction[id], ev.Data)
			if a.Phase == client.SUCCEEDED || a.Phase == client.FAILED || a.Phase == client.ABORTED || a.Phase == client.TIMEDOUT {
				terminal[id]++
			}
			total++
		}
		if len(perAction) != n {
			t.Errorf("%s stream: events of %d actions, want %d", name, len(perAction), n)
		}
		for id, c := range terminal {
			if c != 1 {
				t.Errorf("%s stream: %d terminal events for %s, want 1", name, c, id)
			}
		}
		t.Logf("%s stream: %d events for %d actions, %.2f per action", name, total, len(perAction), float64(total)/float64(len(perAction)))
	}
	var last []byte
	count := 0
	for _, ev := range drain(summaries) {
		if ev.Type != "run" {
			continue
		}
		if bytes.Equal(ev.Data, last) {
			t.Error("runs stream: the same summary twice in a row")
		}
		last = ev.Data
		count++
	}
	var sum client.RunSummary
	if err := json.Unmarshal(last, &sum); err != nil || sum.Phase != client.SUCCEEDED || sum.ActionCount != n {
		t.Errorf("runs stream: last summary %s", last)
	}
	t.Logf("runs stream: %d summaries", count)
}

// drain returns the events a stream has received so far.
func drain(s *sseStream) []client.Event {
	var out []client.Event
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return out
			}
			if ev.Comment == "" {
				out = append(out, ev)
			}
		default:
			return out
		}
	}
}
