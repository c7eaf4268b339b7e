package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"taskactions/pkg/client"
)

// BenchmarkIdleStreams: resident memory per idle open stream, on the
// server (against a control plane in another process, so that its RSS is
// its own) and on the floor, at 1,000 and 10,000 streams each.
func BenchmarkIdleStreams(b *testing.B) {
	raiseFileLimit(b)
	tr := func() *http.Transport { return &http.Transport{} }
	f := startFloor(b)
	floorKB := idleStreams(b, "floor", f.proc, func() *http.Client { return &http.Client{Transport: tr()} }, f.url+"/events", nil)
	_, s := startSplit(b)
	must(b, post(s.client(tr()), s.url+"/api/v1/actions", enqueueBody("idle", "r", "a0", ""), http.StatusCreated))
	stacks0, heap0 := goMemory(b, s, tr())
	serverKB := idleStreams(b, "server", s.proc, func() *http.Client { return s.client(tr()) }, s.url+"/api/v1/projects/idle/domains/dev/runs/r/actions/a0/events",
		func(n int) {
			// Where the server's memory per stream goes, from its Go runtime.
			stacks, heap := goMemory(b, s, tr())
			b.Logf("server, %d idle streams: goroutine stacks %.1f KiB, heap in use %.1f KiB per stream",
				n, (stacks-stacks0)/float64(n)/1024, (heap-heap0)/float64(n)/1024)
			if os.Getenv("TASKACTIONS_HEAPPROFILE") != "" && n == idleCounts[len(idleCounts)-1] {
				_ = syscall.Kill(s.pid, syscall.SIGUSR2) // write a heap profile
				time.Sleep(5 * time.Second)
			}
		})
	for i, n := range idleCounts {
		b.ReportMetric(serverKB[i], fmt.Sprintf("server-KiB/stream@%d", n))
		b.ReportMetric(floorKB[i], fmt.Sprintf("floor-KiB/stream@%d", n))
	}
	last := len(idleCounts) - 1
	goal(b, fmt.Sprintf("rss-server/floor@%d", idleCounts[last]), serverKB[last]/floorKB[last], 1.0, false)
}

var idleCounts = []int{1000, 10000}

// idleStreams opens streams up to each of idleCounts, reads each to its initial state, and returns the process's
// RSS growth per stream (KiB) at each count; probe, if set, is called at
// each count with the streams open. The streams close at the end.
func idleStreams(b *testing.B, name string, p proc, newClient func() *http.Client, url string, probe func(n int)) []float64 {
	var open []io.Closer
	defer func() {
		for _, r := range open {
			r.Close()
		}
	}()
	settle := func() float64 {
		time.Sleep(3 * time.Second)
		return p.rssBytes(b)
	}
	base := settle()
	var out []float64
	for _, n := range idleCounts {
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for range n - len(open) {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				// A client per stream: a connection per stream, as
				// browsers on HTTP/1.1 have.
				resp, err := newClient().Get(url)
				if err != nil {
					b.Error(err)
					return
				}
				r := client.NewEventReader(resp.Body)
				for ev, err := r.Next(); err == nil && ev.Type != "synced"; ev, err = r.Next() {
				}
				mu.Lock()
				open = append(open, resp.Body)
				mu.Unlock()
			})
		}
		wg.Wait()
		rss := settle()
		per := (rss - base) / float64(len(open)) / 1024
		b.Logf("%s, %d idle streams: RSS %.1f MB (from %.1f MB), %.1f KiB per stream", name, len(open), rss/1e6, base/1e6, per)
		out = append(out, per)
		if probe != nil {
			probe(len(open))
		}
	}
	return out
}

// goMemory reads the server's goroutine stacks and heap in use (bytes)
// from its /metrics.
func goMemory(b *testing.B, s *server, tr *http.Transport) (stacks, heap float64) {
	resp, err := s.client(tr).Get(s.url + "/metrics")
	must(b, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(b, err)
	m := numbers(string(raw), " ")
	return m["go_memstats_stack_inuse_bytes"], m["go_memstats_heap_inuse_bytes"]
}
