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

func (s *server) do(t *testing.T, method, path string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL()+"/api/v1"+path, nil)
	if method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (s *server) gone(t *testing.T, run client.RunIdentifier, names ...string) {
	t.Helper()
	for _, name := range names {
		eventually(t, 10*time.Second, name+" to be gone", func() bool {
			r, err := s.api.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, name)
			return err == nil && r.StatusCode() == http.StatusNotFound
		})
	}
}

// DELETE of an action takes its descendants along (on the embedded control
// plane, which has no garbage collector, this server's collector does);
// while any is unfinished it is 409, unless abort=true. DELETE of a run
// takes every action, and the run's summary goes with them, from history
// too. kubectl deleting a parent, the way Flyte aborts, deletes its
// children too.
func TestDeleteActionsAndRuns(t *testing.T) {
	run := newRun()
	base := fmt.Sprintf("/projects/%s/domains/%s/runs/%s", run.Project, run.Domain, run.Name)
	enqueue(t, srv, run, "a0", "")
	enqueue(t, srv, run, "c1", "a0")
	enqueue(t, srv, run, "g1", "c1")
	enqueue(t, srv, run, "c2", "a0")
	putStatus(t, srv, run, "c1", 1, client.SUCCEEDED)

	if r := srv.do(t, http.MethodDelete, base+"/actions/c1"); r.StatusCode != http.StatusConflict {
		t.Errorf("delete c1 while g1 runs: %s, want 409", r.Status)
	}
	putStatus(t, srv, run, "g1", 1, client.SUCCEEDED)
	if r := srv.do(t, http.MethodDelete, base+"/actions/c1"); r.StatusCode != http.StatusAccepted {
		t.Fatalf("delete finished c1: %s, want 202", r.Status)
	}
	srv.gone(t, run, "c1", "g1")

	if r := srv.do(t, http.MethodDelete, base); r.StatusCode != http.StatusConflict {
		t.Errorf("delete a running run: %s, want 409", r.Status)
	}
	if r := srv.do(t, http.MethodDelete, base+"?abort=true"); r.StatusCode != http.StatusAccepted {
		t.Fatalf("delete the run with abort=true: %s, want 202", r.Status)
	}
	srv.gone(t, run, "a0", "c2")
	eventually(t, 10*time.Second, "the run summary to go", func() bool {
		return srv.do(t, http.MethodGet, base).StatusCode == http.StatusNotFound
	})
	if r := srv.do(t, http.MethodDelete, base); r.StatusCode != http.StatusNotFound {
		t.Errorf("delete a deleted run: %s, want 404", r.Status)
	}

	// As Flyte aborts: delete the parent object, and its children go. The
	// objects leave the control plane, not history (only a deletion
	// through the API removes that): the unfinished actions read ABORTED.
	flyte := newRun()
	enqueue(t, srv, flyte, "a0", "")
	enqueue(t, srv, flyte, "c1", "a0")
	enqueue(t, srv, flyte, "g1", "c1")
	k := newKubectl(t)
	k.must("", "delete", "taskaction", "-n", flyte.Project+"-"+flyte.Domain, flyte.Name+"-a0", "--wait=false")
	eventually(t, 10*time.Second, "the objects to go", func() bool { return liveObjects(srv, flyte) == 0 })
	for _, name := range []string{"a0", "c1", "g1"} {
		eventually(t, 10*time.Second, name+" to read ABORTED", func() bool {
			r, err := srv.api.GetActionWithResponse(context.Background(), flyte.Project, flyte.Domain, flyte.Name, name)
			return err == nil && r.JSON200 != nil && r.JSON200.Phase == client.ABORTED
		})
	}
}

// HEAD answers like GET without a body, streams included (at once).
func TestHead(t *testing.T) {
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	for _, path := range []string{
		fmt.Sprintf("/projects/%s/domains/%s/runs", run.Project, run.Domain),
		fmt.Sprintf("/projects/%s/domains/%s/runs/%s/actions/a0", run.Project, run.Domain, run.Name),
		fmt.Sprintf("/projects/%s/domains/%s/runs/%s/events", run.Project, run.Domain, run.Name),
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodHead, srv.URL()+"/api/v1"+path, nil)
		resp, err := srv.http.Do(req)
		cancel()
		if err != nil {
			t.Fatalf("HEAD %s: %v", path, err)
		}
		resp.Body.Close()
		get := srv.do(t, http.MethodGet, path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD %s: %s %s, want 200 %s", path, resp.Status, resp.Header.Get("Content-Type"), get.Header.Get("Content-Type"))
		}
	}
	if r, err := http.Head(srv.URL() + "/healthz"); err != nil || r.StatusCode != http.StatusOK {
		t.Errorf("HEAD /healthz: %v %v", err, r.Status)
	}
	if r := srv.do(t, http.MethodHead, "/nope"); r.StatusCode != http.StatusNotFound || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
		t.Errorf("HEAD of no route: %s %s", r.Status, r.Header.Get("Content-Type"))
	}
}
