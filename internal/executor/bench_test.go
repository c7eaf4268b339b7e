package executor

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	v1 "taskactions/api/v1"
	"taskactions/internal/journal"
	"taskactions/internal/taskactions"
)

// BenchmarkEcho1000: 1,000 echo actions enqueued at concurrency 16, from
// the first enqueue to the last SUCCEEDED; and the latency of one executor
// round (p50/p99, from its histogram).
var echoRuns atomic.Int64

func BenchmarkEcho1000(b *testing.B) {
	reg := prometheus.NewRegistry()
	e := startEnv(&testing.T{}, b.TempDir(), func(c *Config) { c.Metrics = reg })
	defer e.stop()
	for range b.N {
		// A run of its own each round, across -count too: the control
		// plane outlives the benchmark.
		run := v1.RunID{Project: "bench", Domain: "dev", Run: fmt.Sprintf("echo%d", echoRuns.Add(1))}
		sub, _, _ := e.mgr.Subscribe(context.Background(), taskactions.Scope{Run: run}, nil)
		var done atomic.Int64
		finished := make(chan struct{})
		go func() {
			seen := map[string]bool{}
			var buf []journal.Entry[*taskactions.ActionUpdate]
			for range sub.Ready() {
				buf, _ = sub.Drain(buf[:0])
				for _, ev := range buf {
					if ev.Value.Phase == v1.PhaseSucceeded && !seen[ev.Value.ID.Name] {
						seen[ev.Value.ID.Name] = true
						if done.Add(1) == 1000 {
							close(finished)
							return
						}
					}
				}
			}
		}()
		start := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= 1000; i = next.Add(1) {
					if _, _, err := e.mgr.Enqueue(context.Background(), taskactions.EnqueueRequest{
						ID: taskactions.ActionID{Project: run.Project, Domain: run.Domain, Run: run.Run, Name: fmt.Sprintf("a%d", i)}, TaskType: "echo",
					}); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		select {
		case <-finished:
		case <-time.After(5 * time.Minute):
			b.Fatalf("only %d of 1000 succeeded", done.Load())
		}
		b.ReportMetric(1000/time.Since(start).Seconds(), "actions/s")
		sub.Close()
	}
	p50, p99 := histogramQuantiles(b, reg, "taskactions_executor_reconcile_seconds")
	b.ReportMetric(p50*1000, "reconcile-p50-ms")
	b.ReportMetric(p99*1000, "reconcile-p99-ms")
}

// histogramQuantiles estimates quantiles from a histogram's buckets,
// interpolating within the bucket as Prometheus does.
func histogramQuantiles(b *testing.B, reg *prometheus.Registry, name string) (p50, p99 float64) {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return quantile(h, 0.5), quantile(h, 0.99)
		}
	}
	b.Fatalf("no histogram %s", name)
	return 0, 0
}

func quantile(h *dto.Histogram, q float64) float64 {
	rank := q * float64(h.GetSampleCount())
	lower, below := 0.0, 0.0
	for _, bk := range h.GetBucket() {
		count := float64(bk.GetCumulativeCount())
		if count >= rank {
			return lower + (bk.GetUpperBound()-lower)*(rank-below)/max(count-below, 1)
		}
		lower, below = bk.GetUpperBound(), count
	}
	return lower
}
