package notifier_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	v1 "taskactions/api/v1"
	"taskactions/internal/journal"
	"taskactions/internal/taskactions"
	"taskactions/internal/taskactions/actionstest"
	"taskactions/internal/taskactions/notifier"
	"taskactions/internal/testenv"
)

// BenchmarkDispatch measures the event pipeline in process: informer
// handler -> journal -> subscribers, and -> workqueue -> run service.
// One op is one event; the figure is events/s with 10 subscribers reading.
func BenchmarkDispatch(b *testing.B) {
	n := notifier.New(notifier.Config{Runs: actionstest.RunService(b), Log: testenv.Logger()})
	m := taskactions.New(taskactions.Config{OnEvent: n.Observe, Log: testenv.Logger()})
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- n.Run(ctx, func() {}) }()
	m.Cache().Journal().SetFloor(1)
	run := v1.RunID{Project: "bench", Domain: "dev", Run: "r1"}
	var delivered atomic.Int64
	var readers sync.WaitGroup
	for range 10 {
		sub, _, _ := m.Subscribe(ctx, taskactions.Scope{Run: run}, nil)
		readers.Add(1)
		go func() {
			defer readers.Done()
			var buf []journal.Entry[*taskactions.ActionUpdate]
			for range sub.Ready() {
				var lagged bool
				buf, lagged = sub.Drain(buf[:0])
				delivered.Add(int64(len(buf)))
				if lagged {
					return
				}
			}
		}()
		defer sub.Close()
	}
	const objects = 1000
	tas := make([]*v1.TaskAction, objects)
	for i := range tas {
		parent := "a0"
		tas[i] = &v1.TaskAction{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench-dev", Name: fmt.Sprintf("r1-c%d", i), UID: types.UID(fmt.Sprint("u", i))},
			Spec:       v1.TaskActionSpec{Project: "bench", Domain: "dev", RunName: "r1", ActionName: fmt.Sprintf("c%d", i), ParentActionName: &parent, TaskType: "echo"},
			Status: v1.TaskActionStatus{Attempts: 1, Conditions: []metav1.Condition{{
				Type: v1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: v1.ReasonExecuting,
			}}},
		}
	}
	b.ResetTimer()
	for i := range b.N {
		ta := *tas[i%objects]
		ta.ResourceVersion = fmt.Sprint(i + 2)
		ta.Status.Attempts = uint32(i/objects + 1)
		m.Cache().Deliver(watch.Modified, tas[i%objects], &ta)
	}
	// The workqueue coalesces an object's events: done when it is empty
	// and the workers have finished what they held.
	for n.QueueDepth() > 0 {
		time.Sleep(time.Millisecond)
	}
	stop()
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
	elapsed := b.Elapsed()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}
