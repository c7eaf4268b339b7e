package notifier_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	v1 "taskactions/api/v1"
	"taskactions/internal/runs"
	"taskactions/internal/taskactions"
	"taskactions/internal/taskactions/actionstest"
	"taskactions/internal/taskactions/notifier"
	"taskactions/internal/testenv"
)

// gatedNotifier holds every call until the gate opens, failing the first
// failures calls after that, and keeps the last action it accepted by name.
// It holds recorded as finished before the notifier's start.
type gatedNotifier struct {
	gate     chan struct{}
	mu       sync.Mutex
	failures int
	calls    int
	last     map[string]runs.Action
	recorded map[types.UID]v1.Phase
}

func (g *gatedNotifier) note(ctx context.Context, a runs.Action) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	if g.failures > 0 {
		g.failures--
		return errors.New("history is down")
	}
	g.last[a.Name] = a
	return nil
}

func (g *gatedNotifier) RecordAction(ctx context.Context, a runs.Action) error { return g.note(ctx, a) }
func (g *gatedNotifier) UpdateActionStatus(ctx context.Context, a runs.Action) error {
	return g.note(ctx, a)
}

func (g *gatedNotifier) Recorded(context.Context) (map[types.UID]v1.Phase, error) {
	return g.recorded, nil
}

func (g *gatedNotifier) lastPhases() map[string]v1.Phase {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]v1.Phase{}
	for name, a := range g.last {
		out[name] = a.Phase
	}
	return out
}

// phaseEvents are objects' events by hand, as the informer would hand them
// over: each object goes QUEUED, then RUNNING over and over, then
// SUCCEEDED.
func phaseEvents(m *taskactions.Manager, objects, each int) {
	for i := range each {
		phase := v1.PhaseRunning
		switch i {
		case 0:
			phase = v1.PhaseQueued
		case each - 1:
			phase = v1.PhaseSucceeded
		}
		for o := range objects {
			ta := &v1.TaskAction{
				ObjectMeta: metav1.ObjectMeta{Namespace: "w-dev", Name: fmt.Sprintf("r-c%d", o), UID: types.UID(fmt.Sprint("u", o)),
					ResourceVersion: fmt.Sprint(i*objects + o + 2)},
				Spec:   v1.TaskActionSpec{Project: "w", Domain: "dev", RunName: "r", ActionName: fmt.Sprintf("c%d", o), TaskType: "echo"},
				Status: v1.TaskActionStatus{Attempts: uint32(i + 1), Conditions: phaseConditions(phase)},
			}
			typ := watch.Modified
			if i == 0 {
				typ = watch.Added
			}
			m.Cache().Deliver(typ, nil, ta)
		}
	}
}

// phaseConditions are the conditions an executor writes for a phase.
func phaseConditions(p v1.Phase) []metav1.Condition {
	switch p {
	case v1.PhaseSucceeded:
		return []metav1.Condition{{Type: v1.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: v1.ReasonCompleted}}
	case v1.PhaseRunning:
		return []metav1.Condition{{Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1.ReasonExecuting}}
	}
	return nil
}

// The informer's handler feeds every stream, so a run service that stops
// answering must not stop it: with every notification held, thousands of
// events still go through, and once the run service answers it learns each
// object's latest phase.
func TestInformerNeverWaitsForTheRunService(t *testing.T) {
	g := &gatedNotifier{gate: make(chan struct{}), last: map[string]runs.Action{}}
	m, n := feed(t, notifier.Config{Runs: g})

	const objects, each = 10, 2000
	delivered := make(chan struct{})
	go func() {
		phaseEvents(m, objects, each)
		close(delivered)
	}()
	select {
	case <-delivered:
	case <-time.After(30 * time.Second):
		t.Fatal("the informer's handler is blocked on the run service")
	}
	if depth := n.QueueDepth(); depth > objects {
		t.Fatalf("queue depth %d with every notification held: want at most one entry per object (%d)", depth, objects)
	}

	close(g.gate)
	testenv.Eventually(t, 10*time.Second, "every object's final phase", func() bool {
		got := g.lastPhases()
		for o := range objects {
			if got[fmt.Sprintf("c%d", o)] != v1.PhaseSucceeded {
				return false
			}
		}
		return true
	})
	if g.calls >= objects*each/10 {
		t.Errorf("%d run service calls for %d events: the queue should coalesce each object's events", g.calls, objects*each)
	}
}

// A failed notification is retried by the queue, without waiting for the
// object to change again.
func TestFailedNotificationIsRetried(t *testing.T) {
	g := &gatedNotifier{gate: make(chan struct{}), last: map[string]runs.Action{}, failures: 3}
	close(g.gate)
	m, _ := feed(t, notifier.Config{Runs: g})

	phaseEvents(m, 1, 2) // QUEUED, then SUCCEEDED: one notification, failing three times
	testenv.Eventually(t, 10*time.Second, "the retried notification", func() bool {
		return g.lastPhases()["c0"] == v1.PhaseSucceeded
	})
}

// Warm gets each changed action's latest update, but not the actions a
// restart finds finished (their encodings would only cost memory), nor are
// those told to the run service again. One whose phase differs from the
// one history holds is told.
func TestWorkersWarmChangedActionsOnly(t *testing.T) {
	var mu sync.Mutex
	warmed := map[string]v1.Phase{}
	warm := func(u *taskactions.ActionUpdate) {
		mu.Lock()
		defer mu.Unlock()
		warmed[u.ID.Name] = u.Phase
	}
	g := &gatedNotifier{gate: make(chan struct{}), last: map[string]runs.Action{},
		recorded: map[types.UID]v1.Phase{"old": v1.PhaseSucceeded, "other": v1.PhaseFailed}}
	close(g.gate)
	m, _ := feed(t, notifier.Config{Runs: g, Warm: warm})

	for _, name := range []string{"old", "other"} {
		m.Cache().Deliver(watch.Added, nil, &v1.TaskAction{
			ObjectMeta: metav1.ObjectMeta{Namespace: "w-dev", Name: "r-" + name, UID: types.UID(name), ResourceVersion: "1"},
			Spec:       v1.TaskActionSpec{Project: "w", Domain: "dev", RunName: "r", ActionName: name, TaskType: "echo"},
			Status:     v1.TaskActionStatus{Attempts: 1, Conditions: phaseConditions(v1.PhaseSucceeded)},
		})
	}
	phaseEvents(m, 3, 3)
	testenv.Eventually(t, 10*time.Second, "each changed action warmed at its last phase", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return warmed["c0"] == v1.PhaseSucceeded && warmed["c1"] == v1.PhaseSucceeded && warmed["c2"] == v1.PhaseSucceeded &&
			g.lastPhases()["other"] == v1.PhaseSucceeded
	})
	mu.Lock()
	defer mu.Unlock()
	if _, ok := warmed["old"]; ok {
		t.Error("an action found finished was warmed")
	}
	if _, ok := g.lastPhases()["old"]; ok {
		t.Error("an action history holds as finished was told again")
	}
}

// feed returns a manager that is not watching, whose events (given by
// hand with Deliver) go to a running notifier of cfg, stopped with the
// test.
func feed(t *testing.T, cfg notifier.Config) (*taskactions.Manager, *notifier.Notifier) {
	cfg.Workers, cfg.Log = 2, testenv.Logger()
	n := notifier.New(cfg)
	m := taskactions.New(taskactions.Config{Client: actionstest.Client(t, cp), OnEvent: n.Observe, Log: testenv.Logger()})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- n.Run(ctx, func() {}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
	return m, n
}
