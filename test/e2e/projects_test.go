package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"taskactions/pkg/client"
)

// A new project appears in the projects stream when its first run does,
// counts its runs, and goes when its last run is deleted; the list agrees.
func TestProjectsListAndStream(t *testing.T) {
	st := openStream(t, srv.http, srv.URL()+"/api/v1/project-events", "")
	st.untilSynced(t)
	run := newRun()
	next := func(want int64, deleted bool) {
		t.Helper()
		for {
			ev := st.next(t, 10*time.Second)
			var p client.ProjectDomain
			mustJSON(t, ev.Data, &p)
			if ev.Type != "project" || p.Project != run.Project {
				continue // other tests' projects
			}
			if p.Domain != run.Domain || p.RunCount != want || (p.Deleted != nil && *p.Deleted) != deleted {
				t.Fatalf("project event %s, want %d runs, deleted %v", ev.Data, want, deleted)
			}
			return
		}
	}
	enqueue(t, srv, run, "a", "")
	next(1, false)
	second := client.RunIdentifier{Project: run.Project, Domain: run.Domain, Name: run.Name + "b"}
	enqueue(t, srv, second, "a", "")
	next(2, false)

	code, body := srv.get(t, "/projects")
	var l client.ProjectList
	if err := json.Unmarshal(body, &l); code != http.StatusOK || err != nil {
		t.Fatalf("GET /projects: HTTP %d %s", code, body)
	}
	found := false
	for _, p := range l.Items {
		if p.Project == run.Project {
			found = p.Domain == run.Domain && p.RunCount == 2 && time.Since(p.LastActivity) < time.Minute
		}
	}
	if !found {
		t.Fatalf("GET /projects has no %s/%s with 2 runs: %s", run.Project, run.Domain, body)
	}

	for _, r := range []client.RunIdentifier{run, second} {
		if code := srv.deleteRun(t, r, true); code != http.StatusAccepted {
			t.Fatalf("delete run: %d", code)
		}
	}
	next(1, false)
	next(0, true)
}
