package taskactions

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
	"taskactions/internal/testenv"
)

func TestTerminalStatusRecordedOnceAcrossRestart(t *testing.T) {
	n := newCountingNotifier(t)
	m := newManager(t, n)
	run := newRun()
	id := actionOf(run, "a0")
	ta := mustEnqueue(t, m, echoRequest(id, ""))
	mustPut(t, m, id, 1, v1.PhaseRunning)
	mustPut(t, m, id, 1, v1.PhaseSucceeded)

	eventually(t, 10*time.Second, "the terminal label", func() bool {
		got, err := kubeClient(t).FlyteV1().TaskActions(ta.Namespace).Get(context.Background(), ta.Name, metav1.GetOptions{})
		return err == nil && got.Labels[v1.LabelTerminalState] == "true"
	})
	if got := n.terminalCount(id); got != 1 {
		t.Fatalf("terminal status reported %d times before the restart, want 1", got)
	}
	sum, err := n.Get(context.Background(), v1.RunID{Project: run.Project, Domain: run.Domain, Run: run.Run})
	if err != nil || sum.Phase != v1.PhaseSucceeded || sum.EndedAt == nil {
		t.Fatalf("run summary %+v", sum)
	}

	m.StopWatching()
	m2 := newManager(t, n)
	// Touch the object so its worker handles one more event after the
	// initial list; once it has, the initial one was handled too.
	before := m2.EventsHandled()
	patch := []byte(`{"metadata":{"annotations":{"touched":"yes"}}}`)
	if _, err := kubeClient(t).FlyteV1().TaskActions(ta.Namespace).Patch(context.Background(), ta.Name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the worker to handle the touch", func() bool { return m2.EventsHandled() > before && m2.QueueDepth() == 0 })
	if got := n.terminalCount(id); got != 1 {
		t.Fatalf("terminal status reported %d times across a restart, want exactly 1", got)
	}
}

// The embedded control plane runs in this process too, with goroutines
// of its own that come and go; what must not stay behind are those running
// the manager's code or client-go's informer machinery.
func TestStopWatchingLeavesNoGoroutine(t *testing.T) {
	before := map[string]bool{}
	for _, g := range managerGoroutines(nil) {
		before[g] = true
	}
	for range 3 {
		m := New(Config{Client: kubeClient(t), Notifier: newCountingNotifier(t), Log: testenv.Logger()})
		if err := m.StartWatching(context.Background()); err != nil {
			t.Fatal(err)
		}
		run := newRun()
		sub, _, _ := m.Subscribe(context.Background(), Scope{Run: run}, nil)
		mustEnqueue(t, m, echoRequest(actionOf(run, "a0"), ""))
		mustPut(t, m, actionOf(run, "a0"), 1, v1.PhaseSucceeded)
		sub.Close()
		m.StopWatching()
	}
	var leaked []string
	deadline := time.Now().Add(5 * time.Second)
	for leaked = managerGoroutines(before); len(leaked) > 0 && time.Now().Before(deadline); leaked = managerGoroutines(before) {
		time.Sleep(50 * time.Millisecond)
	}
	if len(leaked) > 0 {
		t.Fatalf("%d goroutines left behind:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
}

// managerGoroutines returns the header line (or, for new ones, the whole
// stack) of goroutines running manager or informer code, except those
// whose header is in skip.
func managerGoroutines(skip map[string]bool) []string {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "TestStopWatchingLeavesNoGoroutine") || strings.Contains(g, "k8s.io/apiserver/") {
			continue // this test's own goroutine, or the API server's watch cache
		}
		header, _, _ := strings.Cut(g, " [")
		for _, pkg := range []string{"taskactions/internal/taskactions.", "k8s.io/client-go/tools/cache.", "taskactions/internal/kube/informers"} {
			switch {
			case !strings.Contains(g, pkg):
			case skip == nil:
				out = append(out, header)
			case !skip[header]:
				out = append(out, g)
			}
			if strings.Contains(g, pkg) {
				break
			}
		}
	}
	return out
}
