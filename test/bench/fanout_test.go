package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	v1 "taskactions/api/v1"
	"taskactions/pkg/client"
)

const (
	children    = 10
	updateRate  = 20 // per second
	updateSpell = 10 * time.Second
)

// target is what the readers read and the updater changes: the server, the
// floor, or the control plane's watches. Only proc's CPU is counted.
type target struct {
	name        string
	stream      string // the stream's URL
	proc        proc
	mustDeliver bool // every change to every reader, or the benchmark fails
	// side is another process whose CPU is read too (the control plane).
	side *proc
	// open reads one stream until ctx ends, adding each live change's
	// latency; it calls ready once it has its initial state.
	open func(ctx context.Context, lat *latencies, ready func())
	// change makes change n, carrying its send time.
	change func(n int) error
}

// result is one target's figures.
type result struct {
	p50, p99 float64 // ms
	// changeP50, changeP99: the change request's own round trip (ms),
	// the part of the latency spent before any stream is written.
	changeP50, changeP99 float64
	cpuPer1000           float64 // CPU-ms per 1,000 deliveries
	cpu                  float64 // CPU seconds of the spell
	sideCPU              float64 // the side process's
	delivered            int64
}

// measure opens readers streams of t, makes updateRate changes a second
// for updateSpell, waits for every delivery (or 30 s), and reports. The
// streams are closed when it returns, so that the next measure has the
// descriptors.
func measure(b *testing.B, t target, readers int) result {
	expected := int64(updateSpell/(time.Second/updateRate)) * int64(readers)
	ctx, cancel := context.WithCancel(context.Background())
	var open sync.WaitGroup
	defer open.Wait()
	defer cancel()
	lat := &latencies{}
	var ready sync.WaitGroup
	ready.Add(readers)
	sem := make(chan struct{}, 64) // a connection storm is not what is measured
	for range readers {
		sem <- struct{}{}
		open.Go(func() { t.open(ctx, lat, sync.OnceFunc(func() { <-sem; ready.Done() })) })
	}
	ready.Wait()
	time.Sleep(time.Second)
	cpu0, side0 := t.proc.cpuSeconds(b), 0.0
	reads0, writes0, written0 := t.proc.syscalls(b)
	if t.side != nil {
		side0 = t.side.cpuSeconds(b)
	}
	period := time.Second / updateRate
	tick := time.NewTicker(period)
	changes := &latencies{}
	for n := range int(updateSpell / period) {
		<-tick.C
		start := time.Now()
		if err := t.change(n); err != nil {
			b.Error(err)
			break
		}
		changes.add(time.Since(start))
	}
	tick.Stop()
	for deadline := time.Now().Add(30 * time.Second); lat.got.Load() < expected && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	r := result{cpu: t.proc.cpuSeconds(b) - cpu0, p50: lat.percentile(0.5), p99: lat.percentile(0.99),
		changeP50: changes.percentile(0.5), changeP99: changes.percentile(0.99)}
	if t.side != nil {
		r.sideCPU = t.side.cpuSeconds(b) - side0
	}
	got := lat.got.Load()
	r.delivered = got
	r.cpuPer1000 = r.cpu / float64(max(got, 1)) * 1e6
	detail(b, "%s, %d readers: %d of %d delivered, p50 %.1f ms, p99 %.1f ms (the change request alone: p50 %.1f, p99 %.1f), CPU %.2f s, %.1f CPU-ms per 1,000 deliveries",
		t.name, readers, got, expected, r.p50, r.p99, r.changeP50, r.changeP99, r.cpu, r.cpuPer1000)
	first, spread := lat.perChange()
	detail(b, "%s, per change: first delivery p50 %.1f, p90 %.1f, p98 %.1f ms; first to last delivery p50 %.1f, p90 %.1f, p98 %.1f ms",
		t.name, first.percentile(0.5), first.percentile(0.9), first.percentile(0.98),
		spread.percentile(0.5), spread.percentile(0.9), spread.percentile(0.98))
	reads, writes, written := t.proc.syscalls(b)
	perDelivery := func(n float64) float64 { return n / float64(max(got, 1)) }
	detail(b, "%s: per delivery %.2f write and %.2f read system calls, %.0f bytes written",
		t.name, perDelivery(writes-writes0), perDelivery(reads-reads0), perDelivery(written-written0))
	if n := lat.failed.Load(); n > 0 {
		detail(b, "%s: %d failures among %d readers (streams not opened, ended early or reset), the first: %v", t.name, n, readers, lat.firstErr.Load())
	}
	if got != expected && t.mustDeliver {
		b.Errorf("%s: %d of %d events delivered", t.name, got, expected)
	}
	return r
}

// sseReader reads an event stream with the reader every client here uses,
// timing each live action event.
func sseReader(c *http.Client, url string) func(ctx context.Context, lat *latencies, ready func()) {
	return func(ctx context.Context, lat *latencies, ready func()) {
		defer ready()
		// An HTTP/2 transport keeps its connection after the stream: close
		// it, or the next target's readers run out of file descriptors.
		defer c.CloseIdleConnections()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			lat.fail(err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			lat.fail(fmt.Errorf("GET %s: %s", url, resp.Status))
			return
		}
		r := client.NewEventReader(resp.Body)
		synced := false
		for {
			ev, err := r.Next()
			if err != nil {
				if ctx.Err() == nil {
					lat.fail(fmt.Errorf("stream ended early: %w", err))
				}
				return
			}
			switch ev.Type {
			case "reset":
				lat.fail(fmt.Errorf("reset: %s", ev.Data))
			case "synced":
				synced = true
				ready()
			case "action":
				if t, ok := sentAt(ev.Data); ok && synced {
					lat.addChange(t)
				}
			}
		}
	}
}

// changeBody is one change as the updater sends it: its message, the send
// time, changes the object every time. The attempt stays the same: a new
// one adds a phase-history entry, and events growing with every change
// would outgrow the floor's, padded to the size of the first.
func changeBody() []byte {
	return fmt.Appendf(nil, `{"attempt":1,"status":{"phase":"RUNNING","message":"t=%d"}}`, time.Now().UnixNano())
}

// serverTarget is the parent a0 of the run "fan<round>", with children
// c0..c9, on s: each target of one server has a run of its own.
func serverTarget(b *testing.B, s *server, tr func() *http.Transport, round int) target {
	run := fmt.Sprintf("fan%d", round)
	c := s.client(tr())
	must(b, post(c, s.url+"/api/v1/actions", enqueueBody("fan", run, "a0", ""), http.StatusCreated))
	for i := range children {
		must(b, post(c, s.url+"/api/v1/actions", enqueueBody("fan", run, fmt.Sprintf("c%d", i), "a0"), http.StatusCreated))
	}
	stream := fmt.Sprintf("%s/api/v1/projects/fan/domains/dev/runs/%s/actions/a0/events", s.url, run)
	return target{name: "server", proc: s.proc, mustDeliver: true, stream: stream,
		open: func(ctx context.Context, lat *latencies, ready func()) {
			sseReader(s.client(tr()), stream)(ctx, lat, ready)
		},
		change: func(n int) error {
			url := fmt.Sprintf("%s/api/v1/projects/fan/domains/dev/runs/%s/actions/c%d/status", s.url, run, n%children)
			return put(c, url, changeBody())
		}}
}

// floorTarget is the bare broadcaster, its events padded to size bytes of
// data: the same bytes per delivery as the server's, since on loopback a
// write's cost grows with its size.
func floorTarget(b *testing.B, f *floor, tr func() *http.Transport, size int) target {
	c := &http.Client{Transport: tr()}
	return target{name: "floor", proc: f.proc, mustDeliver: true,
		open: func(ctx context.Context, lat *latencies, ready func()) {
			sseReader(&http.Client{Transport: tr()}, f.url+"/events")(ctx, lat, ready)
		},
		change: func(n int) error {
			body := changeBody()
			if pad := size - len(body) - len(`,"pad":""`); pad > 0 {
				body = fmt.Appendf(body[:len(body)-1], `,"pad":"%s"}`, strings.Repeat("x", pad))
			}
			return post(c, f.url+"/change", body, http.StatusNoContent)
		}}
}

// liveEventSize is the size of the data of a live event of t's stream,
// read after one change.
func liveEventSize(b *testing.B, s *server, t target, tr func() *http.Transport) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.stream, nil)
	resp, err := s.client(tr()).Do(req)
	must(b, err)
	defer resp.Body.Close()
	r := client.NewEventReader(resp.Body)
	for ev, err := r.Next(); ev.Type != "synced"; ev, err = r.Next() {
		must(b, err)
	}
	must(b, t.change(0))
	for {
		ev, err := r.Next()
		must(b, err)
		if ev.Type == "action" {
			return len(ev.Data)
		}
	}
}

// watchTarget is a direct Kubernetes watch of a0's children on the
// control plane, what other dashboards open per viewer; the changes go
// through the server (whose run it is), the CPU counted is the control
// plane's.
func watchTarget(b *testing.B, cp, s *server, tr func() *http.Transport) target {
	t := serverTarget(b, s, tr, 100)
	selector := fmt.Sprintf("%s=fan100,%s=a0", v1.LabelRun, v1.LabelParent)
	t.name, t.proc, t.mustDeliver = "watches", cp.proc, false
	t.open = func(ctx context.Context, lat *latencies, ready func()) {
		w, err := cp.kube.FlyteV1().TaskActions("fan-dev").Watch(ctx, metav1.ListOptions{LabelSelector: selector})
		ready()
		if err != nil {
			b.Error(err)
			return
		}
		defer w.Stop()
		for ev := range w.ResultChan() {
			ta, ok := ev.Object.(*v1.TaskAction)
			if !ok || ev.Type != watch.Modified { // ADDED: the initial state
				continue
			}
			for _, c := range ta.Status.Conditions {
				if t, ok := sentAt([]byte(c.Message)); ok && c.Type == v1.ConditionProgressing {
					lat.addChange(t)
				}
			}
		}
	}
	return t
}

func put(c *http.Client, url string, body []byte) error {
	req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("PUT %s: %s: %s", url, resp.Status, msg)
	}
	// Read to the end, as a client does: an HTTP/1.1 connection whose
	// response body is closed unread is not reused, and each change then
	// paid a new connection (measured: 0 of 200 PUTs reused one) where
	// the floor's bodiless answers keep theirs.
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return fmt.Errorf("PUT %s: read the answer: %w", url, err)
	}
	return nil
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// detail prints a figure behind the goals at once: a benchmark's log
// keeps only its first ten lines, and those are for the goals.
func detail(b *testing.B, format string, args ...any) {
	fmt.Printf("    %s: %s\n", b.Name(), fmt.Sprintf(format, args...))
}

// goal reports a ratio against its goal, and whether it holds.
func goal(b *testing.B, name string, ratio, limit float64, atLeast bool) {
	b.Helper()
	goalIn(b, name, ratio, limit, atLeast, "x")
}

// goalIn reports a figure in unit against its goal, and whether it holds.
func goalIn(b *testing.B, name string, v, limit float64, atLeast bool, unit string) {
	b.Helper()
	holds := v <= limit
	op := "≤"
	if atLeast {
		holds, op = v >= limit, "≥"
	}
	verdict := "holds"
	if !holds {
		verdict = "MISSED"
	}
	b.Logf("GOAL %s: %.2f%s (goal %s %.2f%s) %s", name, v, unit, op, limit, unit, verdict)
	b.ReportMetric(v, name)
}

// BenchmarkFanout: readers of one parent action while its children change
// at 20 updates/s for 10 s, on the server and on the floor (a bare stdlib
// SSE broadcaster, ./floor), over HTTP/1.1 and over HTTP/2 with TLS. The server runs against a control plane in
// another process, so its CPU is its own. Reported: delivery latency from
// the change request to the reader, p50 and p99, CPU per 1,000
// deliveries, and the goals' ratios against the floor.
func BenchmarkFanout(b *testing.B) {
	for _, readers := range fanoutReaders() {
		for _, p := range []protocol{http1(), h2(b)} {
			b.Run(fmt.Sprintf("readers=%d/%s", readers, p.name), func(b *testing.B) {
				fanout(b, readers, p)
			})
		}
	}
}

// fanoutReaders are the reader counts measured: 1,000 and 10,000, or
// those of FANOUT_READERS ("1,100"): one reader shows the latency of a
// change alone, the round trip through the control plane included.
func fanoutReaders() []int {
	v := os.Getenv("FANOUT_READERS")
	if v == "" {
		return []int{1000, 10000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func fanout(b *testing.B, readers int, p protocol) {
	tr := p.transport
	raiseFileLimit(b)
	_, s := startSplit(b, p.serverEnv()...)
	st := serverTarget(b, s, tr, 0)
	size := liveEventSize(b, s, st, tr)
	b.Logf("the server's events carry %d bytes of data; the floor's are padded to as many", size)
	f := startFloor(b, p.certs...)
	ft := floorTarget(b, f, tr, size)
	var floorR, serverR []result
	for round := range fanoutRounds() {
		// Each goes first in turn, so that a change in the machine's load
		// through the rounds weighs on both alike.
		if round%2 == 0 {
			floorR, serverR = append(floorR, measure(b, ft, readers)), append(serverR, measure(b, st, readers))
		} else {
			serverR, floorR = append(serverR, measure(b, st, readers)), append(floorR, measure(b, ft, readers))
		}
		b.Logf("round %d: CPU server/floor %.2fx, p99 server/floor %.2fx", round+1,
			serverR[round].cpuPer1000/floorR[round].cpuPer1000, serverR[round].p99/floorR[round].p99)
	}
	cpu := func(r result) float64 { return r.cpuPer1000 }
	p99 := func(r result) float64 { return r.p99 }
	goal(b, "cpu-server/floor", medianRatio(serverR, floorR, cpu), 1.25, false)
	goal(b, "p99-server/floor", medianRatio(serverR, floorR, p99), 1.5, false)
	b.ReportMetric(medianOf(serverR, p99), "server-p99-ms")
	b.ReportMetric(medianOf(floorR, p99), "floor-p99-ms")
	b.ReportMetric(medianOf(serverR, cpu), "server-cpu-ms/1000")
	b.ReportMetric(medianOf(floorR, cpu), "floor-cpu-ms/1000")
}

// medianRatio is the median over the rounds of a figure's ratio, the
// server's (s) to the floor's (f).
func medianRatio(s, f []result, figure func(result) float64) float64 {
	ratios := make([]float64, len(s))
	for i := range s {
		ratios[i] = figure(s[i]) / figure(f[i])
	}
	return median(ratios)
}

// medianOf is the median over the rounds of a figure.
func medianOf(rs []result, figure func(result) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = figure(r)
	}
	return median(xs)
}

// fanoutRounds is how many times the floor and the server are each
// measured, alternately (FANOUT_ROUNDS, default 3): the goals are the
// medians of the rounds' ratios, since on a shared machine one pair of
// runs can differ by a third either way.
func fanoutRounds() int {
	if n, err := strconv.Atoi(os.Getenv("FANOUT_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// median of xs: the middle one, or the mean of the two middle ones.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	return (s[(n-1)/2] + s[n/2]) / 2
}

// BenchmarkFanoutWatches: 1,000 readers of the server's stream against
// 1,000 direct Kubernetes watches of the same children on the control
// plane, as other dashboards open them. The control plane's CPU during
// the server's spell is what the writes and the informers cost; what it
// spends beyond that during the watches' spell is what serving the
// watches costs. The embedded control plane runs without the API
// server's watch cache (it would hold a second, larger copy of every
// object), so each watch here is an etcd watch of its own: a real
// cluster's API server serves them cheaper.
func BenchmarkFanoutWatches(b *testing.B) {
	const readers = 1000
	tr := func() *http.Transport { return &http.Transport{} }
	cp, s := startSplit(b)
	st := serverTarget(b, s, tr, 0)
	st.side = &cp.proc
	serverR := measure(b, st, readers)
	watchR := measure(b, watchTarget(b, cp, s, tr), readers)
	perK := func(cpu float64, n int64) float64 { return cpu / float64(max(n, 1)) * 1e6 }
	watchServing := perK(watchR.cpu-serverR.sideCPU, watchR.delivered)
	b.Logf("control plane: %.2f s CPU under the server's streams, %.2f s under the watches", serverR.sideCPU, watchR.cpu)
	b.Logf("serving: server %.1f, watches %.1f CPU-ms per 1,000 deliveries (watches/server %.2fx)",
		serverR.cpuPer1000, watchServing, watchServing/serverR.cpuPer1000)
	b.Logf("whole system (server and control plane): server's streams %.1f, watches %.1f CPU-ms per 1,000 (watches/server %.2fx); p99 watches/server %.2fx",
		perK(serverR.cpu+serverR.sideCPU, serverR.delivered), watchR.cpuPer1000,
		watchR.cpuPer1000/perK(serverR.cpu+serverR.sideCPU, serverR.delivered), watchR.p99/serverR.p99)
	b.ReportMetric(watchR.p99, "watch-p99-ms")
	b.ReportMetric(watchServing/serverR.cpuPer1000, "cpu-watches/server")
}
