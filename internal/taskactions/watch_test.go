package taskactions

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/testenv"
)

// The embedded control plane runs in this process too, with goroutines
// of its own that come and go; what must not stay behind are those running
// the manager's code or client-go's informer machinery.
func TestStopWatchingLeavesNoGoroutine(t *testing.T) {
	before := map[string]bool{}
	for _, g := range managerGoroutines(nil) {
		before[g] = true
	}
	for range 3 {
		m := New(Config{Client: kubeClient(t), Log: testenv.Logger()})
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
