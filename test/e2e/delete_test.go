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

// do makes a bodiless request by hand with the admin token (a HEAD, which
// the generated client does not make).
func (s *server) do(t *testing.T, method, path string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL()+"/api/v1"+path, nil)
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// deleteAction deletes an action (and its descendants) through the
// generated client, returning the status.
func (s *server) deleteAction(t testing.TB, run client.RunIdentifier, name string, abort bool) int {
	t.Helper()
	r, err := s.api.DeleteActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, name, &client.DeleteActionParams{Abort: &abort})
	if err != nil {
		t.Fatal(err)
	}
	return r.StatusCode()
}

// deleteRun deletes a run through the generated client, returning the
// status.
func (s *server) deleteRun(t testing.TB, run client.RunIdentifier, abort bool) int {
	t.Helper()
	r, err := s.api.DeleteRunWithResponse(context.Background(), run.Project, run.Domain, run.Name, &client.DeleteRunParams{Abort: &abort})
	if err != nil {
		t.Fatal(err)
	}
	return r.StatusCode()
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

	if code := srv.deleteAction(t, run, "c1", false); code != http.StatusConflict {
		t.Errorf("delete c1 while g1 runs: %d, want 409", code)
	}
	putStatus(t, srv, run, "g1", 1, client.SUCCEEDED)
	if code := srv.deleteAction(t, run, "c1", false); code != http.StatusAccepted {
		t.Fatalf("delete finished c1: %d, want 202", code)
	}
	srv.gone(t, run, "c1", "g1")

	if code := srv.deleteRun(t, run, false); code != http.StatusConflict {
		t.Errorf("delete a running run: %d, want 409", code)
	}
	if code := srv.deleteRun(t, run, true); code != http.StatusAccepted {
		t.Fatalf("delete the run with abort=true: %d, want 202", code)
	}
	srv.gone(t, run, "a0", "c2")
	eventually(t, 10*time.Second, "the run summary to go", func() bool {
		return srv.do(t, http.MethodGet, base).StatusCode == http.StatusNotFound
	})
	if code := srv.deleteRun(t, run, false); code != http.StatusNotFound {
		t.Errorf("delete a deleted run: %d, want 404", code)
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
