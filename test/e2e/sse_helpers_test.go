package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"taskactions/pkg/client"
)

// sseStream is an open event stream read by the client's EventReader.
type sseStream struct {
	resp   *http.Response
	r      *client.EventReader
	cancel context.CancelFunc
	events chan client.Event
	errs   chan error
}

func runStreamURL(s *server, run client.RunIdentifier) string {
	return fmt.Sprintf("%s/api/v1/projects/%s/domains/%s/runs/%s/events", s.URL(), run.Project, run.Domain, run.Name)
}

func actionStreamURL(s *server, run client.RunIdentifier, action string) string {
	return fmt.Sprintf("%s/api/v1/projects/%s/domains/%s/runs/%s/actions/%s/events", s.URL(), run.Project, run.Domain, run.Name, action)
}

// openStream connects; lastID, when set, is sent as Last-Event-ID. Events
// are read in the background into a channel.
func openStream(t testing.TB, c *http.Client, url, lastID string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := c.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("stream %s: %s", url, resp.Status)
	}
	s := &sseStream{resp: resp, r: client.NewEventReader(resp.Body), cancel: cancel, events: make(chan client.Event, 1<<16), errs: make(chan error, 1)}
	go func() {
		for {
			ev, err := s.r.Next()
			if err != nil {
				s.errs <- err
				close(s.events)
				return
			}
			s.events <- ev
		}
	}()
	t.Cleanup(s.close)
	return s
}

// ended reports whether the server ends the stream within d (the events
// before the end are dropped).
func (s *sseStream) ended(d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case _, open := <-s.events:
			if !open {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

func (s *sseStream) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// next returns the next event that is not a comment.
func (s *sseStream) next(t testing.TB, timeout time.Duration) client.Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("stream ended: %v", <-s.errs)
			}
			if ev.Comment != "" || (ev.Type == "" && ev.Retry > 0) {
				continue
			}
			return ev
		case <-deadline:
			t.Fatalf("no event within %v", timeout)
		}
	}
}

// untilSynced reads up to and including the next synced event.
func (s *sseStream) untilSynced(t testing.TB) []client.Event {
	t.Helper()
	var out []client.Event
	for {
		ev := s.next(t, 10*time.Second)
		out = append(out, ev)
		if ev.Type == "synced" {
			return out
		}
	}
}

// state applies action events to a map of name -> latest event data, as a
// dashboard would (reset empties it).
type state map[string]client.ActionEvent

func (st state) apply(t testing.TB, ev client.Event) {
	t.Helper()
	switch ev.Type {
	case "reset":
		clear(st)
	case "action":
		var a client.ActionEvent
		if err := json.Unmarshal(ev.Data, &a); err != nil {
			t.Fatalf("action event data: %v: %s", err, ev.Data)
		}
		if a.Deleted {
			delete(st, a.ActionId.Name)
		} else {
			st[a.ActionId.Name] = a
		}
	}
}

func cursorOf(t testing.TB, id string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatalf("event id %q is not a cursor", id)
	}
	return n
}

func eventTypes(evs []client.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.Type + " ")
	}
	return strings.TrimSpace(b.String())
}

func nameOf(t testing.TB, ev client.Event) string {
	t.Helper()
	var a client.ActionEvent
	mustJSON(t, ev.Data, &a)
	return a.ActionId.Name
}

func mustJSON(t testing.TB, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}
