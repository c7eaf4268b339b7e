package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/app"
	"taskactions/pkg/client"
)

const startOverServeEnv = "TASKACTIONS_E2E_STARTOVER_SERVER"

// TestPromotionStartOverServerProcess is the server process of
// TestPromotionStartsOverWithoutItsWorkDir (this test binary, run with
// startOverServeEnv set); otherwise it does nothing.
func TestPromotionStartOverServerProcess(t *testing.T) {
	serveFromEnv(t, startOverServeEnv, func(c *app.Config) { c.ExecutorTaskTypes = "*" })
}

// A server SIGKILLed while the second of three steps runs comes back
// without the Promotions' working directories, as a replica with a disk of
// its own takes over from a dead one: the Promotion starts over from its
// first step, as Kargo's does when its working directory is fresh. The
// step in flight ends ABORTED, saying why; every step runs again, as new
// actions, the last one (compose-output) in the working directory made
// anew; and the Promotion succeeds.
func TestPromotionStartsOverWithoutItsWorkDir(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	svc := newOnceHungService(t, "/two")
	s1, exited, cmd := startServerProcess(t, "TestPromotionStartOverServerProcess", startOverServeEnv, dir, dataDir)

	k := newKProject(t, s1)
	k.createStage("again", direct(), nil,
		pstep("http", "one", map[string]any{"url": svc.URL + "/one",
			"outputs": []any{map[string]any{"name": "n", "fromExpression": "response.body.n"}}}),
		pstep("http", "two", map[string]any{"url": svc.URL + "/two", "timeout": "10m"}),
		pstep("compose-output", "three", map[string]any{"value": "${{ outputs.one.n }}"}))
	p := k.promote("again", k.createFreight("1.0.0", "").Name)
	eventually(t, 15*time.Second, "the second step to wait on its service", func() bool {
		return svc.count("/two") == 1
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if err := os.RemoveAll(filepath.Join(dataDir, "kargo-work")); err != nil {
		t.Fatal(err)
	}

	s2, err := startServer(dataDir, func(c *app.Config) { c.ExecutorTaskTypes = "*" })
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Stop()
	k.s = s2
	p = k.finished(p.Name)
	if p.Status.Phase != kargoapi.PromotionPhaseSucceeded || !slices.Equal(steps(p), []string{"one=Succeeded", "two=Succeeded", "three=Succeeded"}) {
		t.Fatalf("after the restart without its working directory: %s %q, steps %v", p.Status.Phase, p.Status.Message, steps(p))
	}
	if got := p.Annotations["taskactions.io/promotion-start"]; got != "2" {
		t.Errorf("the Promotion's start is %q, want 2", got)
	}
	if got := fmt.Sprint(p.Status.GetState()["three"]); got != "map[value:2]" {
		t.Errorf("the last step's output %s, want what the first step of the new start read (the second request to /one)", got)
	}
	acts := k.actions(p.Name)
	want := map[string]client.Phase{
		"step-1": client.SUCCEEDED, "step-2": client.ABORTED,
		"step-1-start-2": client.SUCCEEDED, "step-2-start-2": client.SUCCEEDED, "step-3-start-2": client.SUCCEEDED,
		"promotion": client.SUCCEEDED,
	}
	for name, phase := range want {
		if a, ok := acts[name]; !ok || a.Phase != phase {
			t.Errorf("%s: %s (there: %v), want %s", name, a.Phase, ok, phase)
		}
	}
	if _, ok := acts["step-3"]; ok || len(acts) != len(want) {
		t.Errorf("the run's actions: %v, want exactly %v", slices.Sorted(maps.Keys(acts)), slices.Sorted(maps.Keys(want)))
	}
	reason := "the Promotion's working directory is gone from the replica that runs its steps: the Promotion starts over from its first step"
	if a := acts["step-2"]; a.AbortReason == nil || *a.AbortReason != reason {
		t.Errorf("step-2's abort reason %v, want %q", a.AbortReason, reason)
	}
	if one, two := svc.count("/one"), svc.count("/two"); one != 2 || two != 2 {
		t.Errorf("requests: %d to /one, %d to /two; want two each (one per start)", one, two)
	}
}

// onceHungService answers {"n":<the request's count on its path>} to
// every request but the first to hang, which it never answers.
type onceHungService struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newOnceHungService(t *testing.T, hang string) *onceHungService {
	s := &onceHungService{hits: map[string]int{}}
	stuck := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		n := s.hits[r.URL.Path]
		s.mu.Unlock()
		if r.URL.Path == hang && n == 1 {
			<-stuck
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"n":%d}`, n)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(stuck) }) // runs first: Close waits for the handlers
	return s
}

func (s *onceHungService) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}
