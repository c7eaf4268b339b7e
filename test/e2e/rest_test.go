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

// It reads better whole: one scenario, its steps in the order a user takes them.
func TestRESTRoundTrip(t *testing.T) {
	ctx := context.Background()
	api := srv.api
	run := newRun()

	root := enqueue(t, srv, run, "a0", "")
	if root.Phase != client.QUEUED || root.ParentActionName != nil || root.ActionId.Run != run {
		t.Fatalf("enqueued root: %+v", root)
	}
	// The same request again: 200 with the same action.
	again, err := api.EnqueueActionWithResponse(ctx, actionSpec(run, "a0", "", "external"))
	if err != nil || again.StatusCode() != http.StatusOK || again.JSON200.CreatedAt != root.CreatedAt {
		t.Fatalf("repeated enqueue: %v HTTP %d %s", err, again.StatusCode(), again.Body)
	}
	for _, c := range []string{"c1", "c2"} {
		enqueue(t, srv, run, c, "a0")
	}
	enqueue(t, srv, run, "g1", "c1")

	list, err := api.ListRunActionsWithResponse(ctx, run.Project, run.Domain, run.Name, nil)
	if err != nil || list.StatusCode() != http.StatusOK {
		t.Fatalf("list run: %v %s", err, list.Body)
	}
	if names := actionNames(list.JSON200.Items); !slices.Equal(names, []string{"a0", "c1", "c2", "g1"}) {
		t.Errorf("run actions %v", names)
	}
	children, err := api.ListChildActionsWithResponse(ctx, run.Project, run.Domain, run.Name, "a0", nil)
	if err != nil || children.StatusCode() != http.StatusOK {
		t.Fatalf("list children: %v %s", err, children.Body)
	}
	if names := actionNames(children.JSON200.Items); !slices.Equal(names, []string{"c1", "c2"}) {
		t.Errorf("children of a0: %v, want the direct ones", names)
	}

	// Status transitions, as an external executor reports them.
	putStatus(t, srv, run, "c1", 1, client.INITIALIZING)
	putStatus(t, srv, run, "c1", 1, client.RUNNING)
	hit := client.HIT
	msg := "done"
	resp, err := api.PutActionStatusWithResponse(ctx, run.Project, run.Domain, run.Name, "c1", client.StatusRequest{
		Attempt: 1, Status: client.ActionStatus{Phase: client.SUCCEEDED, CacheStatus: &hit, Message: &msg},
	})
	if err != nil || resp.StatusCode() != http.StatusOK {
		t.Fatalf("succeed c1: %v %s", err, resp.Body)
	}
	got, err := api.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, "c1")
	if err != nil || got.StatusCode() != http.StatusOK {
		t.Fatalf("get c1: %v %s", err, got.Body)
	}
	c1 := got.JSON200
	if c1.Phase != client.SUCCEEDED || c1.Attempts != 1 || c1.CacheStatus != client.HIT {
		t.Errorf("c1 after success: phase %s attempts %d cache %s", c1.Phase, c1.Attempts, c1.CacheStatus)
	}
	var history []client.Phase
	for _, h := range c1.PhaseHistory {
		history = append(history, h.Phase)
	}
	if !slices.Equal(history, []client.Phase{client.INITIALIZING, client.RUNNING, client.SUCCEEDED}) {
		t.Errorf("c1 history %v", history)
	}
	// Leaving a terminal phase is a conflict.
	back, _ := api.PutActionStatusWithResponse(ctx, run.Project, run.Domain, run.Name, "c1",
		client.StatusRequest{Attempt: 1, Status: client.ActionStatus{Phase: client.RUNNING}})
	if back.StatusCode() != http.StatusConflict || back.ApplicationproblemJSONDefault == nil {
		t.Errorf("leaving SUCCEEDED: HTTP %d %s, want a 409 problem", back.StatusCode(), back.Body)
	}

	// Abort with a reason: a0 and its unfinished descendants end ABORTED.
	reason := "changed my mind"
	ab, err := api.AbortActionWithResponse(ctx, run.Project, run.Domain, run.Name, "a0", client.AbortRequest{Reason: &reason})
	if err != nil || ab.StatusCode() != http.StatusAccepted {
		t.Fatalf("abort: %v HTTP %d %s", err, ab.StatusCode(), ab.Body)
	}
	if ab.JSON202.Phase != client.ABORTED || ab.JSON202.AbortReason == nil || *ab.JSON202.AbortReason != reason {
		t.Errorf("aborted a0: %+v", ab.JSON202)
	}
	// The descendants follow in the background.
	want := map[string]client.Phase{"a0": client.ABORTED, "c1": client.SUCCEEDED, "c2": client.ABORTED, "g1": client.ABORTED}
	eventually(t, 10*time.Second, fmt.Sprintf("phases %v", want), func() bool {
		list, _ = api.ListRunActionsWithResponse(ctx, run.Project, run.Domain, run.Name, nil)
		for _, a := range list.JSON200.Items {
			if a.Phase != want[a.ActionId.Name] {
				return false
			}
		}
		return len(list.JSON200.Items) == len(want)
	})

	// The run summary follows the root.
	eventually(t, 10*time.Second, "the run summary", func() bool {
		sum, err := api.GetRunWithResponse(ctx, run.Project, run.Domain, run.Name)
		return err == nil && sum.StatusCode() == http.StatusOK && sum.JSON200.Phase == client.ABORTED &&
			sum.JSON200.ActionCount == 4 && sum.JSON200.PhaseCounts["ABORTED"] == 3 && sum.JSON200.EndedAt != nil
	})
	runs, err := api.ListRunsWithResponse(ctx, run.Project, run.Domain, nil)
	if err != nil || len(runs.JSON200.Items) != 1 || runs.JSON200.Items[0].Run != run {
		t.Errorf("list runs: %v %s", err, runs.Body)
	}
	missing, _ := api.GetRunWithResponse(ctx, run.Project, run.Domain, "nope")
	if missing.StatusCode() != http.StatusNotFound {
		t.Errorf("unknown run: HTTP %d", missing.StatusCode())
	}
}

func TestOpenAPIAndMetricsAreServed(t *testing.T) {
	resp, err := http.Get(srv.URL() + "/api/v1/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc := readAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/yaml" || !contains(doc, "openapi: 3.0.3") {
		t.Fatalf("openapi.yaml: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	anon, err := http.Get(srv.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	anon.Body.Close()
	if anon.StatusCode != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %s, want 401", anon.Status)
	}
	m, err := srv.http.Get(srv.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Body.Close()
	body := readAll(t, m.Body)
	for _, name := range []string{
		"taskactions_http_requests_total", "taskactions_http_request_duration_seconds",
		"taskactions_sse_open_streams", "taskactions_manager_queue_depth",
		"taskactions_cache_events_published_total", "taskactions_cache_objects", "taskactions_cache_synced",
	} {
		if !contains(body, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	for _, kind := range []string{"TaskAction", "Stage"} {
		if !contains(body, `taskactions_cache_synced{kind="`+kind+`"} 1`) {
			t.Errorf("/metrics does not report the %s cache synced", kind)
		}
	}
	if !contains(body, `route="/api/v1/openapi.yaml"`) {
		t.Errorf("/metrics does not label requests by route template")
	}
}

func actionNames(items []client.Action) []string {
	var out []string
	for _, a := range items {
		out = append(out, a.ActionId.Name)
	}
	return out
}
