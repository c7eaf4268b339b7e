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
	"taskactions/internal/journal"
	"taskactions/internal/kube/clientset/versioned"
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

// newManager starts a manager on the shared control plane; it stops with
// the test.
func newManager(t testing.TB, rs RunDeleter, mutate ...func(*Config)) *Manager {
	t.Helper()
	cfg := Config{Client: kubeClient(t), Log: testenv.Logger()}
	if rs != nil {
		cfg.Runs = rs
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

// listChildren is what ListRunActions is for a run: an action's direct
// children, oldest first, once the cache has this server's writes.
func listChildren(ctx context.Context, m *Manager, parent ActionID) ([]*v1.TaskAction, error) {
	m.actions.CatchUp(ctx)
	return m.cached.children(parent)
}
