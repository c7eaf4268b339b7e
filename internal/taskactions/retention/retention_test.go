package retention

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/taskactions"
	"taskactions/internal/taskactions/actionstest"
	"taskactions/internal/taskactions/notifier"
	"taskactions/internal/testenv"
)

var cp *testenv.ControlPlane

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &cp)) }

// newRetiringManager is a manager recording into a history of its own,
// with a retirer whose retention has already passed for anything finished.
// The control plane is shared with the package's other tests, whose
// finished objects it may retire too: the tests check their own objects,
// not counts.
func newRetiringManager(t *testing.T, record bool) (*taskactions.Manager, *Retirer) {
	t.Helper()
	rs := actionstest.RunService(t)
	var runs notifier.RunService
	if record {
		runs = rs
	}
	m := actionstest.Start(t, cp, runs, func(c *taskactions.Config) { c.History = rs.Store() }).Manager
	return m, New(Config{Actions: m, History: rs.Store(), Client: kubeClient(t).FlyteV1(), After: time.Millisecond, Log: testenv.Logger()})
}

func kubeClient(t *testing.T) versioned.Interface { return actionstest.Client(t, cp) }

// cached is the manager's cached object of an action, nil when it has
// none.
func cached(m *taskactions.Manager, id taskactions.ActionID) *v1.TaskAction {
	ta, _ := m.GetTaskAction(context.Background(), id)
	return ta
}

// retired: the action is gone from the cache, and read from history.
func retired(t *testing.T, m *taskactions.Manager, id taskactions.ActionID) bool {
	t.Helper()
	_, err := m.GetTaskAction(context.Background(), id)
	u, aerr := m.Action(context.Background(), id)
	return errors.Is(err, taskactions.ErrNotFound) && aerr == nil && u != nil
}

func object(t *testing.T, ta *v1.TaskAction) (*v1.TaskAction, bool) {
	t.Helper()
	got, err := kubeClient(t).FlyteV1().TaskActions(ta.Namespace).Get(context.Background(), ta.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return got, true
}

// recorded: history holds the object's incarnation as finished.
func recorded(t *testing.T, r *Retirer, ta *v1.TaskAction) func() bool {
	return func() bool {
		held, err := r.cfg.History.(*history.Store).TerminalLive(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, ok := held[ta.UID]
		return ok
	}
}

// finished: the manager's cache has the action in a terminal phase, which
// the retirer reads.
func finished(m *taskactions.Manager, id taskactions.ActionID) bool {
	ta := cached(m, id)
	return ta != nil && v1.PhaseOfAction(ta).Terminal()
}

func patch(t *testing.T, ta *v1.TaskAction, body string) {
	t.Helper()
	if _, err := kubeClient(t).FlyteV1().TaskActions(ta.Namespace).Patch(context.Background(), ta.Name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// What history has not recorded as finished is never deleted, whatever
// the object says (labels of earlier versions included).
func TestRetirerKeepsWhatHistoryLacks(t *testing.T) {
	m, r := newRetiringManager(t, false)
	run := actionstest.NewRun()
	id := actionstest.ActionOf(run, "a0")
	ta := actionstest.MustEnqueue(t, m, actionstest.Echo(id, ""))
	actionstest.MustPut(t, m, id, 1, v1.PhaseSucceeded)
	patch(t, ta, `{"metadata":{"labels":{"`+v1.LabelTerminalState+`":"true"}}}`) // as a restored object would be
	testenv.Eventually(t, 10*time.Second, "the cache to see the label", func() bool {
		got := cached(m, id)
		return got != nil && got.Labels[v1.LabelTerminalState] == "true" && finished(m, id)
	})
	if !r.due(cached(m, id), time.Now()) {
		t.Fatal("not due: the sweep would not ask history")
	}
	r.Sweep(context.Background())
	if _, ok := object(t, ta); !ok {
		t.Fatal("retention deleted an object history does not have")
	}
}

// Children go before their parents; a retired action reads the same from
// history.
func TestRetirerChildrenFirst(t *testing.T) {
	m, r := newRetiringManager(t, true)
	run := actionstest.NewRun()
	root, child := actionstest.ActionOf(run, "root"), actionstest.ActionOf(run, "child")
	rootObj := actionstest.MustEnqueue(t, m, actionstest.Echo(root, ""))
	childObj := actionstest.MustEnqueue(t, m, actionstest.Echo(child, "root"))
	actionstest.MustPut(t, m, child, 1, v1.PhaseSucceeded)
	actionstest.MustPut(t, m, root, 1, v1.PhaseSucceeded)
	testenv.Eventually(t, 10*time.Second, "both to be recorded", func() bool { return recorded(t, r, rootObj)() && recorded(t, r, childObj)() })
	testenv.Eventually(t, 10*time.Second, "the cache to see both finished", func() bool { return finished(m, root) && finished(m, child) })
	live, err := m.Action(context.Background(), child)
	if err != nil {
		t.Fatal(err)
	}
	cutoff := time.Now()
	rootNow := cached(m, root)
	childNow := cached(m, child)
	if r.due(rootNow, cutoff) || !r.due(childNow, cutoff) {
		t.Fatalf("due: parent %v (it has a child object), child %v", r.due(rootNow, cutoff), r.due(childNow, cutoff))
	}
	// The parent goes in the same sweep only if the cache has lost the
	// child by then; else in the next.
	testenv.Eventually(t, 10*time.Second, "both objects to go", func() bool {
		r.Sweep(context.Background())
		_, rootThere := object(t, rootObj)
		_, childThere := object(t, childObj)
		return !rootThere && !childThere
	})

	retired, err := m.Action(context.Background(), child)
	if err != nil {
		t.Fatalf("the retired child: %v", err)
	}
	if retired.Phase != v1.PhaseSucceeded || !retired.UpdatedAt.Equal(live.UpdatedAt) || len(retired.PhaseHistory) != len(live.PhaseHistory) {
		t.Errorf("retired child %+v, live it was %+v", retired.Action, live.Action)
	}
	page, err := m.RunActions(context.Background(), run, taskactions.Page{})
	if err != nil || len(page.Items) != 2 {
		t.Fatalf("the retired run's actions: %v %d", err, len(page.Items))
	}
}

// An object with a finalizer is only marked deleted: whoever put the
// finalizer decides when it goes.
func TestRetirerRespectsFinalizers(t *testing.T) {
	m, r := newRetiringManager(t, true)
	run := actionstest.NewRun()
	id := actionstest.ActionOf(run, "a0")
	ta := actionstest.MustEnqueue(t, m, actionstest.Echo(id, ""))
	patch(t, ta, `{"metadata":{"finalizers":["example.com/keep"]}}`)
	actionstest.MustPut(t, m, id, 1, v1.PhaseSucceeded)
	testenv.Eventually(t, 10*time.Second, "the record", recorded(t, r, ta))
	testenv.Eventually(t, 10*time.Second, "the cache to see it finished", func() bool { return finished(m, id) })
	r.Sweep(context.Background())
	got, ok := object(t, ta)
	if !ok || got.DeletionTimestamp == nil {
		t.Fatalf("the object: present %v, %+v", ok, got)
	}
	testenv.Eventually(t, 10*time.Second, "the cache to see the deletion mark", func() bool {
		got := cached(m, id)
		return got != nil && got.DeletionTimestamp != nil
	})
	if r.due(got, time.Now()) {
		t.Fatal("an object marked deleted is due again")
	}
	r.Sweep(context.Background())
	if _, ok := object(t, ta); !ok {
		t.Fatal("the object went with its finalizer on")
	}
	patch(t, ta, `{"metadata":{"finalizers":null}}`)
	testenv.Eventually(t, 10*time.Second, "the object to go once its finalizer is removed", func() bool { _, ok := object(t, ta); return !ok })
	if u, err := m.Action(context.Background(), id); err != nil || u.Phase != v1.PhaseSucceeded {
		t.Fatalf("the retired action: %v %v", u, err)
	}
}

// A retired action is final: the same enqueue again answers with it and
// makes nothing (its task would run twice), another spec is a conflict, and
// neither a status report nor a new child is taken (ErrRetired, which the
// API answers 409).
func TestRetiredActionsAreFinal(t *testing.T) {
	ctx := context.Background()
	m, r := newRetiringManager(t, true)
	run := actionstest.NewRun()
	root, child := actionstest.ActionOf(run, "root"), actionstest.ActionOf(run, "child")
	rootObj := actionstest.MustEnqueue(t, m, actionstest.Echo(root, ""))
	childObj := actionstest.MustEnqueue(t, m, actionstest.Echo(child, "root"))
	actionstest.MustPut(t, m, child, 1, v1.PhaseSucceeded)
	actionstest.MustPut(t, m, root, 1, v1.PhaseSucceeded)
	testenv.Eventually(t, 20*time.Second, "both to be retired, and gone from the cache", func() bool {
		r.Sweep(ctx)
		return retired(t, m, root) && retired(t, m, child)
	})

	again, created, err := m.EnqueueView(ctx, actionstest.Echo(root, ""))
	if err != nil || created || again.Phase != v1.PhaseSucceeded || again.UID != string(rootObj.UID) {
		t.Fatalf("the same enqueue again: %v, created %v, phase %s, uid %s (was %s)", err, created, again.Phase, again.UID, rootObj.UID)
	}
	if _, ok := object(t, rootObj); ok {
		t.Fatal("the enqueue made the retired action again")
	}
	other := actionstest.Echo(root, "")
	other.TaskType = "sleep"
	if err := errOf(m.EnqueueView(ctx, other)); !errors.Is(err, taskactions.ErrConflict) {
		t.Errorf("another spec: %v, want a conflict", err)
	}
	for name, err := range map[string]error{
		"Enqueue (objects)": errOf3(m.Enqueue(ctx, actionstest.Echo(child, "root"))),
		"a new child":       errOf3(m.Enqueue(ctx, actionstest.Echo(actionstest.ActionOf(run, "late"), "root"))),
		"a status report":   errOf2(m.PutStatus(ctx, child, 2, taskactions.StatusUpdate{Phase: v1.PhaseRunning})),
	} {
		if !errors.Is(err, taskactions.ErrRetired) || !errors.Is(err, taskactions.ErrNotFound) {
			t.Errorf("%s: %v, want ErrRetired (which is ErrNotFound too)", name, err)
		}
	}
	// The same enqueue of the retired child again: its parent is retired
	// too, and the answer is still the child.
	if again, created, err := m.EnqueueView(ctx, actionstest.Echo(child, "root")); err != nil || created || again.UID != string(childObj.UID) {
		t.Errorf("the retired child again: %v, created %v, uid %s", err, created, again.UID)
	}
	if _, ok := object(t, childObj); ok {
		t.Fatal("the retired child was made again")
	}
}

func errOf(_ taskactions.Action, _ bool, err error) error { return err }
func errOf2(_ *v1.TaskAction, err error) error            { return err }
func errOf3(_ *v1.TaskAction, _ bool, err error) error    { return err }
