package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	v1 "taskactions/api/v1"
	"taskactions/pkg/client"
)

const (
	viewers     = 1000
	children    = 10
	updateRate  = 20 // per second
	updateSpell = 10 * time.Second
)

// latencies collects delivery latencies from many goroutines.
type latencies struct {
	mu  sync.Mutex
	d   []time.Duration
	got atomic.Int64
}

func (l *latencies) add(d time.Duration) {
	l.got.Add(1)
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) percentile(q float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.Sort(l.d)
	if len(l.d) == 0 {
		return 0
	}
	return float64(l.d[int(q*float64(len(l.d)-1))].Microseconds()) / 1000
}

// sentAt reads the send time the updater put in the status message
// ("t=<unix nanoseconds>"), from an event's JSON or an object's message.
func sentAt(data []byte) (time.Time, bool) {
	i := bytes.Index(data, []byte("t="))
	if i < 0 {
		return time.Time{}, false
	}
	j := i + 2
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	ns, err := strconv.ParseInt(string(data[i+2:j]), 10, 64)
	return time.Unix(0, ns), err == nil
}

// fanout is the fan-out scenario on one server: a parent action with
// children, whose statuses an updater changes while viewers watch.
type fanout struct {
	b     *testing.B
	s     *server
	httpc *http.Client
	run   string
}

func newFanout(b *testing.B, s *server) *fanout {
	f := &fanout{b: b, s: s, httpc: s.client(&http.Transport{MaxIdleConnsPerHost: 8}), run: "fan"}
	if err := post(f.httpc, s.url+"/api/v1/actions", enqueueBody("fan", f.run, "a0", ""), http.StatusCreated); err != nil {
		b.Fatal(err)
	}
	for i := range children {
		if err := post(f.httpc, s.url+"/api/v1/actions", enqueueBody("fan", f.run, fmt.Sprintf("c%d", i), "a0"), http.StatusCreated); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

// update changes the children round-robin at updateRate for updateSpell,
// a new attempt each round so that every write is a change. The message
// carries the send time.
func (f *fanout) update(firstAttempt int32) {
	attempt := firstAttempt
	period := time.Second / updateRate
	tick := time.NewTicker(period)
	defer tick.Stop()
	for n := range int(updateSpell / period) {
		<-tick.C
		if n%children == 0 {
			attempt++
		}
		body := fmt.Sprintf(`{"attempt":%d,"status":{"phase":"RUNNING","message":"t=%d"}}`, attempt, time.Now().UnixNano())
		req, _ := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/api/v1/projects/fan/domains/dev/runs/%s/actions/c%d/status", f.s.url, f.run, n%children), bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := f.httpc.Do(req)
		if err != nil {
			f.b.Error(err)
			return
		}
		resp.Body.Close()
	}
}

// measure opens the viewers, runs an update spell from firstAttempt, and
// returns the delivery latency percentiles and the server's CPU seconds
// per 1,000 delivered events.
func (f *fanout) measure(name string, firstAttempt int32, open func(ctx context.Context, lat *latencies, ready *sync.WaitGroup)) (p50, p99, cpuPer1000 float64) {
	b := f.b
	expected := int64(updateSpell/(time.Second/updateRate)) * viewers
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lat := &latencies{}
	var ready sync.WaitGroup
	ready.Add(viewers)
	for range viewers {
		go open(ctx, lat, &ready)
	}
	ready.Wait()
	time.Sleep(time.Second) // let the connection storm settle
	cpu0 := f.s.cpuSeconds(b)
	f.update(firstAttempt)
	deadline := time.Now().Add(30 * time.Second)
	for lat.got.Load() < expected && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cpu := f.s.cpuSeconds(b) - cpu0
	got := lat.got.Load()
	b.Logf("%s: %d of %d events delivered, server CPU %.2fs", name, got, expected, cpu)
	if got < expected {
		b.Errorf("%s: only %d of %d events delivered", name, got, expected)
	}
	return lat.percentile(0.5), lat.percentile(0.99), cpu / float64(got) * 1000
}

// sseViewer reads the parent's event stream, timing each live event.
func (f *fanout) sseViewer(ctx context.Context, lat *latencies, ready *sync.WaitGroup) {
	streamURL := fmt.Sprintf("%s/api/v1/projects/fan/domains/dev/runs/%s/actions/a0/events", f.s.url, f.run)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, streamURL, nil)
	resp, err := f.s.client(&http.Transport{}).Do(req)
	if err != nil {
		f.b.Error(err)
		ready.Done()
		return
	}
	defer resp.Body.Close()
	r := client.NewEventReader(resp.Body)
	synced := false
	for {
		ev, err := r.Next()
		if err != nil {
			if !synced {
				ready.Done()
			}
			return
		}
		switch ev.Type {
		case "synced":
			if !synced {
				synced = true
				ready.Done()
			}
		case "action":
			if t, ok := sentAt(ev.Data); ok && synced {
				lat.add(time.Since(t))
			}
		}
	}
}

// BenchmarkFanout: 1,000 viewers of one parent action while its children
// change at 20 updates/s for 10 s, first as 1,000 SSE streams of this
// server (one shared informer), then as 1,000 direct Kubernetes watches on
// the same API server (what other dashboards do). Reported: delivery
// latency p50/p99 from before the status write to the viewer, and server
// CPU seconds per 1,000 delivered events, for each, and their ratios.
func BenchmarkFanout(b *testing.B) {
	s := startServer(b)
	f := newFanout(b, s)
	sseP50, sseP99, sseCPU := f.measure("sse", 0, f.sseViewer)
	selector := fmt.Sprintf("%s=%s,%s=a0", v1.LabelRun, f.run, v1.LabelParent)
	watchP50, watchP99, watchCPU := f.measure("watch", 100, func(ctx context.Context, lat *latencies, ready *sync.WaitGroup) {
		w, err := s.kube.FlyteV1().TaskActions("fan-dev").Watch(ctx, metav1.ListOptions{LabelSelector: selector})
		ready.Done()
		if err != nil {
			b.Error(err)
			return
		}
		defer w.Stop()
		for ev := range w.ResultChan() {
			ta, ok := ev.Object.(*v1.TaskAction)
			// ADDED events are the watch's initial state, not changes.
			if !ok || ev.Type != watch.Modified {
				continue
			}
			for _, c := range ta.Status.Conditions {
				if t, ok := sentAt([]byte(c.Message)); ok && c.Type == v1.ConditionProgressing {
					lat.add(time.Since(t))
				}
			}
		}
	})
	b.ReportMetric(sseP50, "sse-p50-ms")
	b.ReportMetric(sseP99, "sse-p99-ms")
	b.ReportMetric(sseCPU, "sse-cpu-s/1000ev")
	b.ReportMetric(watchP50, "watch-p50-ms")
	b.ReportMetric(watchP99, "watch-p99-ms")
	b.ReportMetric(watchCPU, "watch-cpu-s/1000ev")
	b.ReportMetric(watchP99/sseP99, "p99-watch/sse")
	b.ReportMetric(watchCPU/sseCPU, "cpu-watch/sse")
}

// BenchmarkIdleStreams: server memory per idle open stream, at 1,000 and
// 10,000 streams.
func BenchmarkIdleStreams(b *testing.B) {
	s := startServer(b)
	httpc := s.client(&http.Transport{})
	if err := post(httpc, s.url+"/api/v1/actions", enqueueBody("idle", "r", "a0", ""), http.StatusCreated); err != nil {
		b.Fatal(err)
	}
	url := s.url + "/api/v1/projects/idle/domains/dev/runs/r/actions/a0/events"
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	settle := func() float64 {
		time.Sleep(3 * time.Second)
		return s.rssBytes(b)
	}
	base := settle()
	for _, n := range []int{1000, 10000} {
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 64)
		for range n - len(open) {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				tr := &http.Transport{}
				resp, err := s.client(tr).Get(url)
				if err != nil {
					b.Error(err)
					return
				}
				r := client.NewEventReader(resp.Body)
				for ev, err := r.Next(); err == nil && ev.Type != "synced"; ev, err = r.Next() {
				}
				mu.Lock()
				open = append(open, resp)
				mu.Unlock()
			}()
		}
		wg.Wait()
		rss := settle()
		perStream := (rss - base) / float64(len(open))
		b.Logf("%d streams: RSS %.1f MB (from %.1f MB), %.1f KB per stream", len(open), rss/1e6, base/1e6, perStream/1024)
		b.ReportMetric(perStream/1024, fmt.Sprintf("KB/stream@%d", n))
	}
}
