// Package actionstest starts the action manager as the server wires it
// (with its notifier and a run service over a SQLite history of the
// test's own) on a test's control plane, for the tests of the packages
// built on taskactions. Only tests import it.
package actionstest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/journal"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/runs"
	"taskactions/internal/taskactions"
	"taskactions/internal/taskactions/notifier"
	"taskactions/internal/testenv"
)

// Client is a client of the control plane.
func Client(t testing.TB, cp *testenv.ControlPlane) versioned.Interface {
	t.Helper()
	c, err := versioned.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Stack is a watching manager and its running notifier.
type Stack struct {
	Manager  *taskactions.Manager
	Notifier *notifier.Notifier
	stop     func()
}

// Start starts a manager whose events go to a notifier of runs (nil: the
// notifier records nothing and warms nothing), both stopped with the
// test or by Stop. mutate may change the manager's config.
func Start(t testing.TB, cp *testenv.ControlPlane, rs notifier.RunService, mutate ...func(*taskactions.Config)) *Stack {
	t.Helper()
	client := Client(t, cp)
	n := notifier.New(notifier.Config{Runs: rs, Workers: 2, Log: testenv.Logger()})
	cfg := taskactions.Config{Client: client, OnEvent: n.Observe, Log: testenv.Logger()}
	if d, ok := rs.(taskactions.RunDeleter); ok {
		cfg.Runs = d
	}
	for _, f := range mutate {
		f(&cfg)
	}
	m := taskactions.New(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.StartWatching(ctx); err != nil {
		t.Fatal(err)
	}
	runCtx, stopRun := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- n.Run(runCtx, func() {}) }()
	var once sync.Once
	s := &Stack{Manager: m, Notifier: n}
	s.stop = func() {
		once.Do(func() {
			stopRun()
			if err := <-ran; err != nil {
				t.Errorf("notifier: %v", err)
			}
			m.StopWatching()
		})
	}
	t.Cleanup(s.stop)
	return s
}

// Stop stops the notifier, then the manager.
func (s *Stack) Stop() { s.stop() }

// Drained reports whether the notifier has handled more than before
// events and holds none: after a change made once a start had listed,
// the start's events were handled too.
func (s *Stack) Drained(before int64) bool {
	return s.Notifier.EventsHandled() > before && s.Notifier.QueueDepth() == 0
}

var runSeq atomic.Int64

// NewRun returns a run in a project of its own, so tests never see each
// other's actions.
func NewRun() v1.RunID {
	n := runSeq.Add(1)
	return v1.RunID{Project: fmt.Sprintf("p%d", n), Domain: "dev", Run: fmt.Sprintf("r%d", n)}
}

// ActionOf is the action of a run with that name.
func ActionOf(r v1.RunID, name string) taskactions.ActionID {
	return taskactions.ActionID{Project: r.Project, Domain: r.Domain, Run: r.Run, Name: name}
}

// Echo is the request of an echo action.
func Echo(id taskactions.ActionID, parent string) taskactions.EnqueueRequest {
	return taskactions.EnqueueRequest{ID: id, Parent: parent, TaskType: "echo", TaskTemplate: []byte(`{"type":"echo"}`)}
}

// MustEnqueue enqueues or fails the test.
func MustEnqueue(t testing.TB, m *taskactions.Manager, req taskactions.EnqueueRequest) *v1.TaskAction {
	t.Helper()
	ta, _, err := m.Enqueue(context.Background(), req)
	if err != nil {
		t.Fatalf("enqueue %s: %v", req.ID, err)
	}
	return ta
}

// MustPut reports a status as an executor outside would, or fails the
// test.
func MustPut(t testing.TB, m *taskactions.Manager, id taskactions.ActionID, attempt uint32, p v1.Phase) {
	t.Helper()
	if _, err := m.PutStatus(context.Background(), id, attempt, taskactions.StatusUpdate{Phase: p}); err != nil {
		t.Fatalf("put status %s %d %s: %v", id, attempt, p, err)
	}
}

// RunService is the run service over a SQLite history of the test's own.
func RunService(t testing.TB) *runs.Service {
	t.Helper()
	store, err := history.Open(context.Background(), "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return runs.New(store, journal.Config{}, testenv.Logger())
}

// CountingRuns is the real run service, counting the calls it gets.
type CountingRuns struct {
	*runs.Service
	mu       sync.Mutex
	terminal map[string]int // terminal phases reported, by action
}

// NewCountingRuns returns a counting run service of the test's own.
func NewCountingRuns(t testing.TB) *CountingRuns {
	return &CountingRuns{Service: RunService(t), terminal: map[string]int{}}
}

func (n *CountingRuns) count(a runs.Action) {
	if !a.Phase.Terminal() {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.terminal[fmt.Sprintf("%s/%s/%s/%s", a.Project, a.Domain, a.Run, a.Name)]++
}

// RecordAction counts, then records.
func (n *CountingRuns) RecordAction(ctx context.Context, a runs.Action) error {
	n.count(a)
	return n.Service.RecordAction(ctx, a)
}

// UpdateActionStatus counts, then records.
func (n *CountingRuns) UpdateActionStatus(ctx context.Context, a runs.Action) error {
	n.count(a)
	return n.Service.UpdateActionStatus(ctx, a)
}

// TerminalCount is how many times a terminal phase of the action was
// reported.
func (n *CountingRuns) TerminalCount(id taskactions.ActionID) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.terminal[id.String()]
}

// FlyteFixtures are test/e2e/testdata/flyte-statuses.yaml: TaskActions as
// Flyte's own Enqueue and executor write them, with Flyte's readings in
// annotations (see the file's header).
func FlyteFixtures(t testing.TB) []*v1.TaskAction {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "../../../test/e2e/testdata/flyte-statuses.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1.TaskAction
	for _, doc := range strings.Split(string(b), "\n---\n") {
		ta := &v1.TaskAction{}
		if err := yaml.UnmarshalStrict([]byte(doc), ta); err != nil {
			t.Fatal(err)
		}
		out = append(out, ta)
	}
	return out
}

// FlyteFixture is the fixture of that action name.
func FlyteFixture(t testing.TB, name string) *v1.TaskAction {
	t.Helper()
	for _, ta := range FlyteFixtures(t) {
		if ta.Spec.ActionName == name {
			return ta
		}
	}
	t.Fatalf("no fixture %s", name)
	return nil
}

// CreateFlytes stores a fixture under a run of the test's own, as Flyte
// would have (object, then its executor's status), and returns it.
func CreateFlytes(t testing.TB, c versioned.Interface, fixture *v1.TaskAction, run v1.RunID, name string) *v1.TaskAction {
	t.Helper()
	ctx := context.Background()
	ta := fixture.DeepCopy()
	ta.Name, ta.Namespace, ta.OwnerReferences, ta.Annotations = run.Run+"-"+name, "flyte", nil, nil
	ta.Spec.Project, ta.Spec.Domain, ta.Spec.RunName, ta.Spec.ActionName, ta.Spec.ParentActionName = run.Project, run.Domain, run.Run, name, nil
	ta.Labels[v1.LabelProject], ta.Labels[v1.LabelDomain], ta.Labels[v1.LabelRun], ta.Labels[v1.LabelAction] = run.Project, run.Domain, run.Run, name
	tas := c.FlyteV1().TaskActions("flyte")
	out, err := tas.Create(ctx, ta, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out.Status = ta.Status
	if out, err = tas.UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return out
}
