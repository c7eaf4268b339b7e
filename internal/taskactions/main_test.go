package taskactions

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/journal"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/runs"
	"taskactions/internal/testenv"
)

// One embedded control plane for the package. Tests share it, so each
// uses its own project, or run names no other test uses.
var cp *testenv.ControlPlane

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &cp)) }

func kubeClient(t testing.TB) versioned.Interface {
	t.Helper()
	c, err := versioned.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// countingNotifier is the real run service, counting the calls it gets.
type countingNotifier struct {
	*runs.Service
	mu       sync.Mutex
	records  map[string]int
	updates  map[string]int
	terminal map[string]int // terminal phases reported, by action
}

func newCountingNotifier(t testing.TB) *countingNotifier {
	return &countingNotifier{
		Service: newRunService(t),
		records: map[string]int{}, updates: map[string]int{}, terminal: map[string]int{},
	}
}

func (n *countingNotifier) count(a runs.Action, m map[string]int) {
	key := fmt.Sprintf("%s/%s/%s/%s", a.Project, a.Domain, a.Run, a.Name)
	n.mu.Lock()
	defer n.mu.Unlock()
	m[key]++
	if a.Phase.Terminal() {
		n.terminal[key]++
	}
}

func (n *countingNotifier) RecordAction(ctx context.Context, a runs.Action) error {
	n.count(a, n.records)
	return n.Service.RecordAction(ctx, a)
}

func (n *countingNotifier) UpdateActionStatus(ctx context.Context, a runs.Action) error {
	n.count(a, n.updates)
	return n.Service.UpdateActionStatus(ctx, a)
}

func (n *countingNotifier) terminalCount(id ActionID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.terminal[id.String()]
}

// newRunService is the run service over a SQLite history of the test's own.
func newRunService(t testing.TB) *runs.Service {
	t.Helper()
	store, err := history.Open(context.Background(), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return runs.New(store, journal.Config{}, testenv.Logger())
}

// newManager starts a manager on the shared control plane; it stops with
// the test.
func newManager(t testing.TB, notifier RunNotifier, mutate ...func(*Config)) *Manager {
	t.Helper()
	cfg := Config{Client: kubeClient(t), Log: testenv.Logger()}
	if notifier != nil {
		cfg.Notifier = notifier
	}
	for _, f := range mutate {
		f(&cfg)
	}
	m := New(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.StartWatching(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.StopWatching)
	return m
}

var runSeq atomic.Int64

// newRun returns a run in a project of its own, so tests never see each
// other's actions.
func newRun() v1.RunID {
	n := runSeq.Add(1)
	return v1.RunID{Project: fmt.Sprintf("p%d", n), Domain: "dev", Run: fmt.Sprintf("r%d", n)}
}

// actionOf is the action of a run with that name.
func actionOf(r v1.RunID, name string) ActionID { return ActionID{r.Project, r.Domain, r.Run, name} }

func echoRequest(id ActionID, parent string) EnqueueRequest {
	return EnqueueRequest{ID: id, Parent: parent, TaskType: "echo", TaskTemplate: []byte(`{"type":"echo"}`)}
}

func mustEnqueue(t testing.TB, m *Manager, req EnqueueRequest) *v1.TaskAction {
	t.Helper()
	ta, _, err := m.Enqueue(context.Background(), req)
	if err != nil {
		t.Fatalf("enqueue %s: %v", req.ID, err)
	}
	return ta
}

func mustPut(t testing.TB, m *Manager, id ActionID, attempt uint32, p v1.Phase) {
	t.Helper()
	if _, err := m.PutStatus(context.Background(), id, attempt, StatusUpdate{Phase: p}); err != nil {
		t.Fatalf("put status %s %d %s: %v", id, attempt, p, err)
	}
}

var eventually = testenv.Eventually

// collector drains a subscription in the background and keeps every
// update, per action, in arrival order.
type collector struct {
	sub    *Subscription
	quit   chan struct{}
	mu     sync.Mutex
	all    []*ActionUpdate
	cursor []uint64
	lagged bool
	done   chan struct{}
}

func collect(t testing.TB, sub *Subscription) *collector {
	c := &collector{sub: sub, quit: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() {
		close(c.quit)
		<-c.done
		sub.Close()
	})
	go func() {
		defer close(c.done)
		var buf []journal.Entry[*ActionUpdate]
		for {
			select {
			case <-sub.Ready():
			case <-c.quit:
				return
			}
			var lagged bool
			buf, lagged = sub.Drain(buf[:0])
			c.mu.Lock()
			for _, e := range buf {
				c.all = append(c.all, e.Value)
				c.cursor = append(c.cursor, e.Cursor)
			}
			c.lagged = c.lagged || lagged
			c.mu.Unlock()
			if lagged {
				return
			}
		}
	}()
	return c
}

// latest returns the last update seen per action name.
func (c *collector) latest() map[string]*ActionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*ActionUpdate{}
	for _, u := range c.all {
		out[u.ID.Name] = u
	}
	return out
}

func (c *collector) updates() []*ActionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*ActionUpdate(nil), c.all...)
}

func testenvLogger() zerolog.Logger { return testenv.Logger() }
