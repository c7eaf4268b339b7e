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
// its own) and on the floor: at 1,000 and 10,000 streams over HTTP/1.1, a
// connection each as browsers have; at 10,000 and 100,000 over HTTP/2,
// where streams share connections, so that 100,000 fit under this
// machine's file limit (20,000, and it cannot be raised).
func BenchmarkIdleStreams(b *testing.B) {
	raiseFileLimit(b)
	b.Run("http1", func(b *testing.B) { idle(b, http1(), []int{1000, 10000}) })
	b.Run("h2", func(b *testing.B) { idle(b, h2(b), []int{10000, 100000}) })
}

// idle measures p's streams at each of counts, and holds the goal at each
// count from 10,000 up.
func idle(b *testing.B, p protocol, counts []int) {
	// One transport per reader on HTTP/1.1, a connection each; one for all
	// on HTTP/2, which opens a connection per 250 streams (the servers'
	// default bound).
	tr := p.transport
	if len(p.certs) > 0 {
		shared := p.transport()
		tr = func() *http.Transport { return shared }
	}
	f := startFloor(b, p.certs...)
	floorKB := idleStreams(b, "floor", f.proc, func() *http.Client { return &http.Client{Transport: tr()} }, f.url+"/events", counts, nil)

	_, s := startSplit(b, append(p.serverEnv(), fmt.Sprintf("%s=%d", maxStreamsEnv, counts[len(counts)-1]+100))...)
	authorized := func() *http.Client { return s.client(tr()) }
	must(b, post(authorized(), s.url+"/api/v1/actions", enqueueBody("idle", "r", "a0", ""), http.StatusCreated))
	stacks0, heap0 := goMemory(b, s, authorized())
	serverKB := idleStreams(b, "server", s.proc, authorized, s.url+"/api/v1/projects/idle/domains/dev/runs/r/actions/a0/events", counts,
		func(n int) {
			// Where the server's memory per stream goes, from its Go runtime.
			stacks, heap := goMemory(b, s, authorized())
			detail(b, "server, %d idle streams: goroutine stacks %.1f KiB, heap in use %.1f KiB per stream",
				n, (stacks-stacks0)/float64(n)/1024, (heap-heap0)/float64(n)/1024)
			if os.Getenv("TASKACTIONS_HEAPPROFILE") != "" && n == counts[len(counts)-1] {
				_ = syscall.Kill(s.pid, syscall.SIGUSR2) // write a heap profile
				time.Sleep(5 * time.Second)
			}
		})
	for i, n := range counts {
		b.ReportMetric(serverKB[i], fmt.Sprintf("server-KiB/stream@%d", n))
		b.ReportMetric(floorKB[i], fmt.Sprintf("floor-KiB/stream@%d", n))
		if n >= 10000 {
			goal(b, fmt.Sprintf("rss-server/floor@%d", n), serverKB[i]/floorKB[i], 1.0, false)
		}
	}
}

// idleStreams opens streams up to each of counts, reads each to its
// initial state, and returns the process's RSS growth per stream (KiB) at
// each count; probe, if set, is called at each count with the streams
// open. The streams close at the end.
func idleStreams(b *testing.B, name string, p proc, newClient func() *http.Client, url string, counts []int, probe func(n int)) []float64 {
	var open []io.Closer
	defer func() {
		for _, r := range open {
			r.Close()
		}
	}()
	settle := func() float64 {
		for range 3 { // each halves a parked goroutine's stack at most once
			p.collect(b)
		}
		return p.rssBytes(b)
	}
	base := settle()
	var out []float64
	for _, n := range counts {
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for range n - len(open) {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				resp, err := newClient().Get(url)
				if err != nil {
					b.Error(err)
					return
				}
				if resp.StatusCode != http.StatusOK {
					resp.Body.Close()
					b.Errorf("GET %s: %s", url, resp.Status)
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
		if b.Failed() {
			b.FailNow()
		}
		rss := settle()
		per := (rss - base) / float64(len(open)) / 1024
		detail(b, "%s, %d idle streams: RSS %.1f MB (from %.1f MB), %.1f KiB per stream", name, len(open), rss/1e6, base/1e6, per)
		out = append(out, per)
		if probe != nil {
			probe(len(open))
		}
	}
	return out
}

// goMemory reads the server's goroutine stacks and heap in use (bytes)
// from its /metrics.
func goMemory(b *testing.B, s *server, c *http.Client) (stacks, heap float64) {
	resp, err := c.Get(s.url + "/metrics")
	must(b, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(b, err)
	m := numbers(string(raw), " ")
	return m["go_memstats_stack_inuse_bytes"], m["go_memstats_heap_inuse_bytes"]
}
