package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"taskactions/pkg/client"
)

// An abort of 5,000 actions is recorded at once (202) and finished in the
// background: its client gives up after a second, the server is stopped
// right after, and still every action ends ABORTED with the reason, under
// the next server.
func TestAbandonedAbortOfFiveThousandActions(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	s, err := startServer(dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := newRun()
	enqueue(t, s, run, "a0", "")
	const children = 5000
	names := make([]string, children)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	enqueueMany(t, s, run, names, "a0", "external")

	impatient, err := client.NewClientWithResponses(s.URL()+"/api/v1", client.WithBearerToken(s.token),
		client.WithHTTPClient(&http.Client{Timeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	reason := "stop everything"
	start := time.Now()
	resp, err := impatient.AbortActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, "a0", client.AbortRequest{Reason: &reason})
	if err != nil {
		t.Fatalf("the abort did not answer within a second: %v", err)
	}
	if resp.StatusCode() != http.StatusAccepted {
		t.Fatalf("abort: %s, want 202", resp.Status())
	}
	t.Logf("abort answered in %v", time.Since(start))
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	s2, err := startServer(dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	// Polled twice a second: a list of 5,000 costs the test as much to
	// decode as the server to abort.
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		list, err := s2.api.ListRunActionsWithResponse(context.Background(), run.Project, run.Domain, run.Name, nil)
		if err != nil || list.JSON200 == nil {
			t.Fatalf("list: %v", err)
		}
		left := 0
		for _, a := range list.JSON200.Items {
			if a.Phase != client.ABORTED || a.AbortReason == nil || *a.AbortReason != "stop everything" {
				left++
			}
		}
		if len(list.JSON200.Items) == children+1 && left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d actions not ABORTED with the reason", left, len(list.JSON200.Items))
		}
	}
	t.Logf("all %d actions ABORTED %v after the request", children+1, time.Since(start))
}

// An abort is read at once: the 202 says ABORTED, and so do a GET and the
// run's list right after it, though the object is gone (as Flyte aborts)
// and reads come from history.
func TestAbortIsReadAtOnce(t *testing.T) {
	ctx := context.Background()
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	putStatus(t, srv, run, "a0", 1, client.RUNNING)
	reason := "read me back"
	ab, err := srv.api.AbortActionWithResponse(ctx, run.Project, run.Domain, run.Name, "a0", client.AbortRequest{Reason: &reason})
	if err != nil || ab.JSON202 == nil || ab.JSON202.Phase != client.ABORTED {
		t.Fatalf("abort: %v %s", err, ab.Body)
	}
	g, err := srv.api.GetActionWithResponse(ctx, run.Project, run.Domain, run.Name, "a0")
	if err != nil || g.JSON200 == nil || g.JSON200.Phase != client.ABORTED || g.JSON200.AbortReason == nil || *g.JSON200.AbortReason != reason {
		t.Fatalf("GET right after the abort: %v %s, want ABORTED with the reason", err, g.Body)
	}
	l, err := srv.api.ListRunActionsWithResponse(ctx, run.Project, run.Domain, run.Name, nil)
	if err != nil || l.JSON200 == nil || len(l.JSON200.Items) != 1 || l.JSON200.Items[0].Phase != client.ABORTED {
		t.Fatalf("the run's list right after the abort: %v %s", err, l.Body)
	}
}
