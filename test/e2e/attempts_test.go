package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"taskactions/pkg/client"
)

// waitAction waits until done holds for an action, and returns it.
func waitAction(t *testing.T, c *client.ClientWithResponses, run client.RunIdentifier, name string, done func(*client.Action) bool) *client.Action {
	t.Helper()
	var a *client.Action
	eventually(t, time.Minute, "action "+name, func() bool {
		r, err := c.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, name)
		a = r.JSON200
		return err == nil && a != nil && done(a)
	})
	return a
}

func terminal(a *client.Action) bool {
	switch a.Phase {
	case client.SUCCEEDED, client.FAILED, client.ABORTED, client.TIMEDOUT:
		return true
	}
	return false
}

// wantProblem checks a refusal: its status, problem+json, and a detail
// that says why.
func wantProblem(t *testing.T, what string, code int, resp *http.Response, p *client.Problem, want, why string, wantCode int) {
	t.Helper()
	if code != wantCode || p == nil || !strings.Contains(value(p.Detail), why) || resp.Header.Get("Content-Type") != "application/problem+json" {
		detail := ""
		if p != nil {
			detail = value(p.Detail)
		}
		t.Errorf("%s: HTTP %d %q, want %d %s saying %q", what, code, detail, wantCode, want, why)
	}
}

// A status report from outside cannot move the attempt of a process task
// the built-in executor runs (it would kill the command and start it
// again), nor append a line to its log, running or finished: 409, saying
// why. The command runs once, under attempt 1.
func TestBuiltInAttemptsAreTheExecutors(t *testing.T) {
	ctx := context.Background()
	run := newRun()
	enqueueProcess(t, srv, run, "p", `echo "started $TASKACTIONS_ATTEMPT"; while [ ! -e go ]; do sleep 0.05; done`)
	waitAction(t, srv.api, run, "p", func(a *client.Action) bool { return a.Phase == client.RUNNING })
	for _, attempt := range []int32{2, 1<<31 - 1} {
		r, err := srv.api.PutActionStatusWithResponse(ctx, run.Project, run.Domain, run.Name, "p",
			client.StatusRequest{Attempt: attempt, Status: client.ActionStatus{Phase: client.RUNNING}})
		if err != nil {
			t.Fatal(err)
		}
		wantProblem(t, "a report of another attempt", r.StatusCode(), r.HTTPResponse, r.ApplicationproblemJSONDefault,
			"409", "run by this server's executor, whose attempts are its own", http.StatusConflict)
	}
	forge := func(what string) {
		t.Helper()
		r, err := srv.api.AppendActionLogsWithResponse(ctx, run.Project, run.Domain, run.Name, "p", client.LogAppend{Attempt: 1, Text: "forged\n"})
		if err != nil {
			t.Fatal(err)
		}
		wantProblem(t, what, r.StatusCode(), r.HTTPResponse, r.ApplicationproblemJSONDefault, "409", "which writes its logs", http.StatusConflict)
	}
	forge("a line appended to a running built-in task's log")
	if err := os.WriteFile(filepath.Join(srv.dataDir, "outputs", run.Project, run.Domain, run.Name, "p", "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a := waitAction(t, srv.api, run, "p", terminal)
	if a.Phase != client.SUCCEEDED || a.Attempts != 1 {
		t.Errorf("the task ended %s at attempt %d, want SUCCEEDED at 1", a.Phase, a.Attempts)
	}
	forge("a line appended to a finished built-in task's log")
	logs, err := srv.api.GetActionLogsWithResponse(ctx, run.Project, run.Domain, run.Name, "p", nil)
	if err != nil || string(logs.Body) != "started 1\n" {
		t.Errorf("the log: %v %q, want the command's one line", err, logs.Body)
	}
}

// An executor outside the server advances an attempt by one, never more,
// and appends to its current attempt's log only.
func TestOutsideAttemptsAdvanceByOne(t *testing.T) {
	ctx := context.Background()
	run := newRun()
	enqueue(t, srv, run, "x", "")
	put := func(attempt int32) *client.PutActionStatusResponse {
		t.Helper()
		r, err := srv.api.PutActionStatusWithResponse(ctx, run.Project, run.Domain, run.Name, "x",
			client.StatusRequest{Attempt: attempt, Status: client.ActionStatus{Phase: client.RUNNING}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	appendTo := func(attempt int) *client.AppendActionLogsResponse {
		t.Helper()
		r, err := srv.api.AppendActionLogsWithResponse(ctx, run.Project, run.Domain, run.Name, "x", client.LogAppend{Attempt: attempt, Text: "line\n"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := put(2); r.StatusCode() != http.StatusConflict {
		t.Errorf("attempt 2 before 1: HTTP %d %s, want 409", r.StatusCode(), r.Body)
	}
	if r := put(1); r.StatusCode() != http.StatusOK {
		t.Fatalf("attempt 1: HTTP %d %s", r.StatusCode(), r.Body)
	}
	for _, skip := range []int32{3, 1<<31 - 1} {
		r := put(skip)
		wantProblem(t, "a report that skips attempts", r.StatusCode(), r.HTTPResponse, r.ApplicationproblemJSONDefault, "409", "skips attempts", http.StatusConflict)
	}
	if r := put(2); r.StatusCode() != http.StatusOK || r.JSON200.Attempts != 2 {
		t.Fatalf("attempt 2 after 1: HTTP %d %s", r.StatusCode(), r.Body)
	}
	r := appendTo(1)
	wantProblem(t, "a line for attempt 1, which is over", r.StatusCode(), r.HTTPResponse, r.ApplicationproblemJSONDefault, "409", "attempt 1 of action", http.StatusConflict)
	if r := appendTo(2); r.StatusCode() != http.StatusOK {
		t.Errorf("a line for the current attempt: HTTP %d %s", r.StatusCode(), r.Body)
	}
	if r := appendTo(3); r.StatusCode() != http.StatusNotFound {
		t.Errorf("a line for an attempt the action never had: HTTP %d %s, want 404", r.StatusCode(), r.Body)
	}
}
