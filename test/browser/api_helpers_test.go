package browser

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"taskactions/pkg/client"
)

// newRun names a run that no other test uses, in a project of its own.
func newRun() client.RunIdentifier {
	n := seq.Add(1)
	return client.RunIdentifier{Project: fmt.Sprintf("web%d", n), Domain: "dev", Name: fmt.Sprintf("r%d", n)}
}

func runPath(r client.RunIdentifier) string {
	return fmt.Sprintf("/projects/%s/domains/%s/runs/%s", r.Project, r.Domain, r.Name)
}

func enqueue(t testing.TB, run client.RunIdentifier, name, parent string) {
	t.Helper()
	if err := tryEnqueue(run, name, parent); err != nil {
		t.Fatal(err)
	}
}

func tryEnqueue(run client.RunIdentifier, name, parent string) error {
	spec := client.ActionSpec{
		ActionId: client.ActionIdentifier{Run: run, Name: name},
		// "external": no executor here claims it; the test drives it.
		Task: client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "external"}},
	}
	if parent != "" {
		spec.ParentActionName = &parent
	}
	resp, err := srv.api.EnqueueActionWithResponse(context.Background(), client.EnqueueRequest{Action: spec})
	if err != nil {
		return err
	}
	if resp.StatusCode() != http.StatusCreated {
		return fmt.Errorf("enqueue %s: HTTP %d %s", name, resp.StatusCode(), resp.Body)
	}
	return nil
}

func setStatus(t testing.TB, run client.RunIdentifier, action string, attempt int32, status client.ActionStatus) {
	t.Helper()
	resp, err := srv.api.PutActionStatusWithResponse(context.Background(), run.Project, run.Domain, run.Name, action,
		client.StatusRequest{Attempt: attempt, Status: status})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusOK {
		t.Fatalf("status of %s to %s: HTTP %d %s", action, status.Phase, resp.StatusCode(), resp.Body)
	}
}

func setPhase(t testing.TB, run client.RunIdentifier, action string, attempt int32, phase client.Phase) {
	t.Helper()
	setStatus(t, run, action, attempt, client.ActionStatus{Phase: phase})
}

func getAction(t testing.TB, run client.RunIdentifier, action string) *client.Action {
	t.Helper()
	resp, err := srv.api.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, action)
	if err != nil {
		t.Fatal(err)
	}
	if resp.JSON200 == nil {
		t.Fatalf("get %s: HTTP %d %s", action, resp.StatusCode(), resp.Body)
	}
	return resp.JSON200
}

// awaitAction is getAction once the action is in phase: an aborted
// action is deleted (as Flyte aborts), and so are the finished ones below
// it, and then read from history, which records each a moment after the
// page shows it (the page reads the stream, history the same events).
func awaitAction(t testing.TB, run client.RunIdentifier, action string, phase client.Phase) *client.Action {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := getAction(t, run, action)
		if a.Phase == phase || time.Now().After(deadline) {
			return a
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rowSel is the selector of an action's row, optionally in a phase.
func rowSel(action string, phase client.Phase) string {
	if phase == "" {
		return fmt.Sprintf(`[data-action=%q]`, action)
	}
	return fmt.Sprintf(`[data-action=%q][data-phase=%q]`, action, phase)
}
