// Package e2e tests the server end to end: the real binary's wiring
// (internal/app) over a real listener, against the embedded control plane,
// through the generated Go client and a real SSE reader.
package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"taskactions/internal/app"
	"taskactions/internal/logging"
	"taskactions/internal/testenv"
	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// srv is the server the tests share; tests that restart a server start
// their own.
var srv *server

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "e2e")
	if err != nil {
		panic(err)
	}
	logging.RouteKlog(testenv.Logger())
	srv, err = startServer(filepath.Join(dir, "data"), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stopPostgres()
	if err := srv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop:", err)
		code = 1
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// server is a server under test.
type server struct {
	app     *app.App
	url     string
	dataDir string
	api     *client.ClientWithResponses
	// http makes requests by hand with the admin token; token is it.
	http  *http.Client
	token string
}

// URL is the server's base URL.
func (s *server) URL() string { return s.url }

// Stop stops it.
func (s *server) Stop() error { return s.app.Stop() }

// startServer starts a server on a free loopback port.
func startServer(dataDir string, mutate func(*app.Config)) (*server, error) {
	cfg := testserver.Config(dataDir, "")
	cfg.SSEHeartbeat = 500 * time.Millisecond
	if mutate != nil {
		mutate(&cfg)
	}
	a, c, err := testserver.Start(cfg)
	if err != nil {
		return nil, err
	}
	s := &server{app: a, url: a.URL(), dataDir: dataDir, api: c, http: http.DefaultClient}
	if cfg.Auth != app.AuthNone {
		if s.token, err = testserver.AdminToken(dataDir); err != nil {
			_ = a.Stop()
			return nil, err
		}
		s.http = &http.Client{Transport: testserver.Authorized(s.token, nil)}
	}
	return s, nil
}

var seq atomic.Int64

// newRun names a run no other test uses, in a project of its own.
func newRun() client.RunIdentifier {
	n := seq.Add(1)
	return client.RunIdentifier{Project: fmt.Sprintf("e2e%d", n), Domain: "dev", Name: fmt.Sprintf("r%d", n)}
}

func actionSpec(run client.RunIdentifier, name, parent, taskType string) client.EnqueueRequest {
	spec := client.ActionSpec{
		ActionId: client.ActionIdentifier{Run: run, Name: name},
		Task:     client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: taskType}},
	}
	if parent != "" {
		spec.ParentActionName = &parent
	}
	return client.EnqueueRequest{Action: spec}
}

func enqueue(t testing.TB, s *server, run client.RunIdentifier, name, parent string) *client.Action {
	t.Helper()
	// "external" is claimed by no executor: these tests drive status by hand.
	resp, err := s.api.EnqueueActionWithResponse(context.Background(), actionSpec(run, name, parent, "external"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue %s: HTTP %d %s", name, resp.StatusCode(), resp.Body)
	}
	return resp.JSON201
}

func putStatus(t testing.TB, s *server, run client.RunIdentifier, action string, attempt int32, phase client.Phase) *client.Action {
	t.Helper()
	resp, err := s.api.PutActionStatusWithResponse(context.Background(), run.Project, run.Domain, run.Name, action,
		client.StatusRequest{Attempt: attempt, Status: client.ActionStatus{Phase: phase}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusOK {
		t.Fatalf("put status %s %s: HTTP %d %s", action, phase, resp.StatusCode(), resp.Body)
	}
	return resp.JSON200
}

var eventually = testenv.Eventually

// enqueueMany enqueues actions of a task type, 16 at a time, reporting the
// first failure from the test's goroutine.
func enqueueMany(t testing.TB, s *server, run client.RunIdentifier, names []string, parent, taskType string) {
	t.Helper()
	work := make(chan string, len(names))
	for _, n := range names {
		work <- n
	}
	close(work)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for n := range work {
				resp, err := s.api.EnqueueActionWithResponse(context.Background(), actionSpec(run, n, parent, taskType))
				if err == nil && resp.StatusCode() != http.StatusCreated {
					err = fmt.Errorf("enqueue %s: HTTP %d %s", n, resp.StatusCode(), resp.Body)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
