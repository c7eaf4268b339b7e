package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"taskactions/pkg/client"
	"taskactions/test/cluster"
)

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
			for er := client.NewEventReader(resp.Body); ; {
				ev, err := er.Next()
				if err != nil {
					break
				}
				if ev.Comment == "" {
					f.apply(ev)
				}
			}
		}
		resp.Body.Close()
	}
}

func (f *runFollower) apply(ev client.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.ID != "" && ev.ID != "0" {
		f.lastID = ev.ID
	}
	switch ev.Type {
	case "reset":
		f.resets++
		f.phases = map[string]string{}
	case "action":
		var a struct {
			ActionID struct{ Name string } `json:"actionId"`
			Phase    string
			Deleted  bool
		}
		if json.Unmarshal(ev.Data, &a) == nil {
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
