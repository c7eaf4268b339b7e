package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"taskactions/test/cluster"
)

// BenchmarkNonExecutingReplica measures what a client of a replica that
// does not execute sees: a GET of one action, and the time from an enqueue
// sent to the executing replica to its event on the other's run stream.
// Run: cd test/cluster && go test -run '^$' -bench NonExecutingReplica -benchtime 500x
func BenchmarkNonExecutingReplica(b *testing.B) {
	ctx := b.Context()
	servers := []*cluster.Server{startChartServer(b), startChartServer(b)}
	// The first replica to start leads; wait for that before measuring.
	leaderIdx, _ := waitLeader(ctx, b, func() []*cluster.Server { return servers })
	executing, other := servers[leaderIdx], servers[1-leaderIdx]

	run := fmt.Sprintf("bench%d", time.Now().UnixNano())
	follower := newRunFollower("replicas", "dev", run)
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	go follower.follow(fctx, func() *cluster.Server { return other })
	f := &features{s: executing, project: "replicas", domain: "dev"}
	if err := f.enqueueAction(ctx, run, "a0", "", "echo", nil); err != nil {
		b.Fatal(err)
	}
	waitSeen(b, follower, "a0")

	var gets, streams []time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if err := other.DoJSON(ctx, http.MethodGet, "/api/v1/projects/replicas/domains/dev/runs/"+run+"/actions/a0", nil, nil, http.StatusOK); err != nil {
			b.Fatal(err)
		}
		gets = append(gets, time.Since(t0))
		name := fmt.Sprintf("c%d", i)
		t0 = time.Now()
		if err := f.enqueueAction(ctx, run, name, "a0", "external", nil); err != nil {
			b.Fatal(err)
		}
		waitSeen(b, follower, name)
		streams = append(streams, time.Since(t0))
	}
	b.StopTimer()
	report(b, "get", gets)
	report(b, "stream", streams)
}

// waitSeen waits until the follower's stream has shown the action.
func waitSeen(b *testing.B, f *runFollower, name string) {
	deadline := time.After(10 * time.Second)
	for {
		if _, ok := f.snapshot()[name]; ok {
			return
		}
		select {
		case <-f.changed:
		case <-time.After(time.Millisecond):
		case <-deadline:
			b.Fatalf("the stream never showed %s", name)
		}
	}
}

func report(b *testing.B, what string, ds []time.Duration) {
	slices.Sort(ds)
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), what+"-p50-ms")
	b.ReportMetric(q(0.99), what+"-p99-ms")
}
