package cluster_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"taskactions/test/cluster"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	id, typ string
	data    []byte
}

// readEvents reads the events of one stream response until it ends.
func readEvents(resp *http.Response, each func(sseEvent)) error {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.typ != "" || ev.data != nil {
				each(ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id:"):
			ev.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "event:"):
			ev.typ = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			ev.data = append(ev.data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")...)
		}
	}
	return sc.Err()
}

// runFollower follows a run's stream as a browser's EventSource would:
// when a replica goes away it reconnects to another with its last event
// id, and applies what comes (a replay, or a reset and a fresh snapshot).
type runFollower struct {
	path string

	mu       sync.Mutex
	phases   map[string]string // action name -> phase
	lastID   string
	resets   int
	connects int
	changed  chan struct{}
}

func newRunFollower(project, domain, run string) *runFollower {
	return &runFollower{
		path:    fmt.Sprintf("/api/v1/projects/%s/domains/%s/runs/%s/events", project, domain, run),
		phases:  map[string]string{},
		changed: make(chan struct{}, 1),
	}
}

// follow reads from the server next() gives, reconnecting whenever a
// stream ends, until ctx ends.
func (f *runFollower) follow(ctx context.Context, next func() *cluster.Server) {
	for ctx.Err() == nil {
		s := next()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+f.path, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		f.mu.Lock()
		if f.lastID != "" {
			req.Header.Set("Last-Event-ID", f.lastID)
		}
		f.connects++
		f.mu.Unlock()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		if resp.StatusCode == http.StatusOK {
			_ = readEvents(resp, f.apply)
		}
		resp.Body.Close()
	}
}

func (f *runFollower) apply(ev sseEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.id != "" && ev.id != "0" {
		f.lastID = ev.id
	}
	switch ev.typ {
	case "reset":
		f.resets++
		f.phases = map[string]string{}
	case "action":
		var a struct {
			ActionID struct{ Name string } `json:"actionId"`
			Phase    string
			Deleted  bool
		}
		if json.Unmarshal(ev.data, &a) == nil {
			f.phases[a.ActionID.Name] = a.Phase
		}
	}
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// snapshot returns the phases the stream shows now.
func (f *runFollower) snapshot() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]string, len(f.phases))
	for k, v := range f.phases {
		out[k] = v
	}
	return out
}
