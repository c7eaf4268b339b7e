package taskactions

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	v1 "taskactions/api/v1"
	"taskactions/internal/kube/clientset/versioned"
)

// The rules of a status report: each case a sequence of reports on an
// action of its own. It reads better whole: a table and the one loop that
// plays it.
func TestPutStatus(t *testing.T) {
	// "builtin" is run by the server's own executor, whose attempts are
	// its own; "echo" here by one outside.
	m := newManager(t, nil, func(c *Config) { c.BuiltIn = func(tt string) bool { return tt == "builtin" } })
	ctx := context.Background()
	hit := v1.CacheHit

	type step struct {
		attempt uint32
		update  StatusUpdate
		want    error
	}
	tests := []struct {
		name string
		// builtIn: the action's task type is the executor's; started:
		// the executor recorded attempt 1, RUNNING, before the steps.
		builtIn, started bool
		steps            []step
		phase            v1.Phase
		attempts         uint32
		history          []string
		cacheStat        v1.CatalogCacheStatus
	}{
		{
			name: "lifecycle",
			steps: []step{
				{1, StatusUpdate{Phase: v1.PhaseInitializing}, nil},
				{1, StatusUpdate{Phase: v1.PhaseRunning}, nil},
				{1, StatusUpdate{Phase: v1.PhaseRunning}, nil}, // no new history entry
				{1, StatusUpdate{Phase: v1.PhaseSucceeded, CacheStatus: &hit}, nil},
				{1, StatusUpdate{Phase: v1.PhaseSucceeded}, nil}, // retried report: no-op
			},
			phase: v1.PhaseSucceeded, attempts: 1, cacheStat: v1.CacheHit,
			history: []string{v1.ReasonInitializing, v1.ReasonExecuting, v1.ReasonCompleted},
		},
		{
			name: "stale attempt and leaving a terminal phase are conflicts",
			steps: []step{
				{1, StatusUpdate{Phase: v1.PhaseRunning}, nil},
				{2, StatusUpdate{Phase: v1.PhaseRunning}, nil},
				{1, StatusUpdate{Phase: v1.PhaseRunning}, ErrConflict},
				{2, StatusUpdate{Phase: v1.PhaseFailed, Error: &v1.ErrorState{Code: "1", Kind: v1.ErrorKindUser, Message: "exit 1"}}, nil},
				{2, StatusUpdate{Phase: v1.PhaseRunning}, ErrConflict},
				{3, StatusUpdate{Phase: v1.PhaseQueued}, ErrConflict},
				{2, StatusUpdate{Phase: v1.PhaseSucceeded}, ErrConflict},
			},
			phase: v1.PhaseFailed, attempts: 2,
			history: []string{v1.ReasonExecuting, v1.ReasonExecuting, v1.ReasonPermanentFailure},
		},
		{
			name: "an outside executor's attempt advances by one",
			steps: []step{
				{2, StatusUpdate{Phase: v1.PhaseRunning}, ErrConflict},
				{1, StatusUpdate{Phase: v1.PhaseRunning}, nil},
				{3, StatusUpdate{Phase: v1.PhaseRunning}, ErrConflict},
				{1<<31 - 1, StatusUpdate{Phase: v1.PhaseRunning}, ErrConflict},
				{2, StatusUpdate{Phase: v1.PhaseRunning}, nil},
			},
			phase: v1.PhaseRunning, attempts: 2,
			history: []string{v1.ReasonExecuting, v1.ReasonExecuting},
		},
		{
			name:    "the built-in executor's attempts are its own",
			builtIn: true, started: true,
			steps: []step{
				{2, StatusUpdate{Phase: v1.PhaseRunning}, ErrConflict},
				{1<<31 - 1, StatusUpdate{Phase: v1.PhaseQueued}, ErrConflict},
				{1, StatusUpdate{Phase: v1.PhaseRunning, Message: "from outside"}, nil},
			},
			phase: v1.PhaseRunning, attempts: 1,
			history: []string{v1.ReasonExecuting},
		},
		{
			name:    "no attempt of the built-in executor is reported before it starts one",
			builtIn: true,
			steps: []step{
				{1, StatusUpdate{Phase: v1.PhaseRunning}, ErrConflict},
			},
			phase: v1.PhaseQueued,
		},
		{
			name: "a new attempt in the same phase is a history entry",
			steps: []step{
				{1, StatusUpdate{Phase: v1.PhaseRunning}, nil},
				{2, StatusUpdate{Phase: v1.PhaseRunning}, nil},
				{2, StatusUpdate{Phase: v1.PhaseTimedOut}, nil},
			},
			phase: v1.PhaseTimedOut, attempts: 2,
			history: []string{v1.ReasonExecuting, v1.ReasonExecuting, v1.ReasonTimedOut},
		},
		{
			name: "attempt zero and unknown phases are invalid",
			steps: []step{
				{0, StatusUpdate{Phase: v1.PhaseRunning}, ErrInvalid},
				{1, StatusUpdate{Phase: "DANCING"}, ErrInvalid},
				{1, StatusUpdate{Phase: v1.PhaseUnspecified}, ErrInvalid},
			},
			phase: v1.PhaseQueued,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := newRun()
			id := actionOf(run, "a0")
			req := echoRequest(id, "")
			if tc.builtIn {
				req.TaskType = "builtin"
			}
			mustEnqueue(t, m, req)
			if tc.started { // as the executor records a start
				if _, err := m.UpdateStatus(ctx, id, func(ta *v1.TaskAction) error {
					ta.Status.Attempts = 1
					m.cfg.setPhase(ta, v1.PhaseChange{Phase: v1.PhaseRunning, Reason: v1.ReasonExecuting})
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			for i, s := range tc.steps {
				_, err := m.PutStatus(ctx, id, s.attempt, s.update)
				if (s.want == nil && err != nil) || (s.want != nil && !errors.Is(err, s.want)) {
					t.Fatalf("step %d (attempt %d %s): got %v, want %v", i, s.attempt, s.update.Phase, err, s.want)
				}
			}
			ta, err := m.objects.live(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got := v1.PhaseOf(ta.Status.Conditions); got != tc.phase {
				t.Errorf("phase %s, want %s", got, tc.phase)
			}
			if ta.Status.Attempts != tc.attempts || ta.Status.CacheStatus != tc.cacheStat {
				t.Errorf("attempts %d cache %s, want %d %s", ta.Status.Attempts, ta.Status.CacheStatus, tc.attempts, tc.cacheStat)
			}
			var hist []string
			for _, h := range ta.Status.PhaseHistory {
				hist = append(hist, h.Phase)
			}
			if len(hist) != len(tc.history) {
				t.Fatalf("history %v, want %v", hist, tc.history)
			}
			for i := range hist {
				if hist[i] != tc.history[i] {
					t.Fatalf("history %v, want %v", hist, tc.history)
				}
			}
		})
	}
}

func TestPhaseHistoryIsBounded(t *testing.T) {
	m := newManager(t, nil, func(c *Config) { c.HistoryLimit = 5 })
	ctx := context.Background()
	run := newRun()
	id := actionOf(run, "a0")
	mustEnqueue(t, m, echoRequest(id, ""))
	for attempt := uint32(1); attempt <= 20; attempt++ {
		if _, err := m.PutStatus(ctx, id, attempt, StatusUpdate{Phase: v1.PhaseRunning, Message: fmt.Sprint(attempt)}); err != nil {
			t.Fatal(err)
		}
	}
	ta, err := m.objects.live(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range ta.Status.PhaseHistory {
		got = append(got, h.Message)
	}
	// The first entry stays; the rest are the most recent, in order.
	if want := []string{"1", "17", "18", "19", "20"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("history messages %v, want %v", got, want)
	}
}

// countingTransport counts the API server requests a client makes, by
// method; the informer's watches are not counted.
type countingTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("watch") != "true" {
		c.mu.Lock()
		c.n[r.Method]++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

func (c *countingTransport) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// A client that enqueues an action and reports several statuses in a row
// (as an executor reports progress) costs one write each and no read: a
// report does not start from a cached copy older than the server's last
// write (to be refused for it and retried after a read), nor read the
// API server for an action created a moment ago.
func TestStatusReportsInARowWriteOnce(t *testing.T) {
	counter := &countingTransport{n: map[string]int{}}
	cfg := rest.CopyConfig(cp.RESTConfig())
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, nil, func(c *Config) { c.Client = client })
	ctx := context.Background()
	id := actionOf(newRun(), "a0")
	mustEnqueue(t, m, echoRequest(id, ""))
	before := counter.counts()
	const reports = 10
	for i := range reports {
		st := StatusUpdate{Phase: v1.PhaseRunning, Message: fmt.Sprintf("step %d", i)}
		if _, err := m.PutStatus(ctx, id, 1, st); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
	}
	after := counter.counts()
	if puts := after[http.MethodPut] - before[http.MethodPut]; puts != reports {
		t.Errorf("%d reports made %d PUTs to the API server, want %d", reports, puts, reports)
	}
	if gets := after[http.MethodGet] - before[http.MethodGet]; gets != 0 {
		t.Errorf("%d reports made %d GETs to the API server (reads after refused writes), want 0", reports, gets)
	}
}
