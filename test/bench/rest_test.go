package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "taskactions/api/v1"
)

const concurrency = 16

// runConcurrently does n jobs on `concurrency` goroutines and returns the
// rate in jobs per second.
func runConcurrently(b *testing.B, n int, job func(i int) error) float64 {
	b.Helper()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				if err := job(i); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

func enqueueBody(project, run, action, parent string) []byte {
	p := ""
	if parent != "" {
		p = fmt.Sprintf(`,"parentActionName":%q`, parent)
	}
	return []byte(fmt.Sprintf(`{"action":{"actionId":{"run":{"project":%q,"domain":"dev","name":%q},"name":%q}%s,"task":{"taskTemplate":{"type":"external"}}}}`,
		project, run, action, p))
}

func post(c *http.Client, url string, body []byte, want int) error {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return nil
}

// directObject is what a client creating TaskActions itself would write:
// the same object the server builds.
func directObject(project, run, action string) *v1.TaskAction {
	return &v1.TaskAction{
		ObjectMeta: metav1.ObjectMeta{Name: run + "-" + action, Namespace: project + "-dev", Labels: map[string]string{
			v1.LabelProject: project, v1.LabelDomain: "dev", v1.LabelRun: run, v1.LabelAction: action,
			v1.LabelIsRoot: "true", v1.LabelActionType: "external",
		}},
		Spec: v1.TaskActionSpec{Project: project, Domain: "dev", RunName: run, ActionName: action, TaskType: "external",
			TaskTemplate: []byte(`{"type":"external"}`)},
	}
}

// BenchmarkEnqueue compares enqueueing through the REST API with creating
// the same objects through client-go on the same API server, at
// concurrency 16, in alternating rounds.
func BenchmarkEnqueue(b *testing.B) {
	s := startServer(b)
	httpc := s.client(&http.Transport{MaxIdleConnsPerHost: concurrency})
	const perRound, rounds = 1500, 2
	var restRate, directRate float64
	for round := range rounds + 1 { // round 0 warms both paths up
		n := perRound
		if round == 0 {
			n = 200
		}
		direct := runConcurrently(b, n, func(i int) error {
			_, err := s.kube.FlyteV1().TaskActions("bench-dev").Create(context.Background(),
				directObject("bench", fmt.Sprintf("d%d", round), fmt.Sprintf("a%d", i)), metav1.CreateOptions{})
			return err
		})
		rest := runConcurrently(b, n, func(i int) error {
			return post(httpc, s.url+"/api/v1/actions", enqueueBody("bench", fmt.Sprintf("r%d", round), fmt.Sprintf("a%d", i), ""), http.StatusCreated)
		})
		if round > 0 {
			directRate += direct / rounds
			restRate += rest / rounds
		}
	}
	b.ReportMetric(restRate, "rest-enqueues/s")
	b.ReportMetric(directRate, "direct-creates/s")
	goal(b, "enqueue-rest/direct", restRate/directRate, 0.95, true)
}

// BenchmarkReadLatency10k: GET of one action of a run of 10,000 through
// the REST API, and the list of all of them while 20 of them a second
// change. The first list is counted: it is what a user opening a big run
// waits for. 500 lists, so that p99 is not simply the slowest one.
func BenchmarkReadLatency10k(b *testing.B) {
	_, s := startSplit(b)
	httpc := s.client(&http.Transport{MaxIdleConnsPerHost: concurrency})
	if err := post(httpc, s.url+"/api/v1/actions", enqueueBody("read", "big", "a0", ""), http.StatusCreated); err != nil {
		b.Fatal(err)
	}
	runConcurrently(b, 9999, func(i int) error {
		return post(httpc, s.url+"/api/v1/actions", enqueueBody("read", "big", fmt.Sprintf("c%d", i), "a0"), http.StatusCreated)
	})
	base := s.url + "/api/v1/projects/read/domains/dev/runs/big"
	measure := func(url string, n int) (p50, p99 float64) {
		lat := make([]time.Duration, 0, n)
		for range n {
			start := time.Now()
			resp, err := httpc.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("%s: %s", url, resp.Status)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		return ms(lat[n/2]), ms(lat[n*99/100])
	}
	getP50, getP99 := measure(base+"/actions/c5000", 1000)
	ctx, stop := context.WithCancel(context.Background())
	changed := make(chan int)
	go func() {
		n := 0
		defer func() { changed <- n }()
		for tick := time.NewTicker(50 * time.Millisecond); ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			body := fmt.Appendf(nil, `{"attempt":1,"status":{"phase":"RUNNING","message":"t=%d"}}`, n)
			if err := put(httpc, fmt.Sprintf("%s/actions/c%d/status", base, 1+n*7919%9999), body); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	listP50, listP99 := measure(base+"/actions", 500)
	stop()
	n := <-changed
	if n < 5 {
		b.Fatalf("only %d changes while measuring", n)
	}
	b.ReportMetric(float64(n), "changes")
	b.ReportMetric(getP50, "get-p50-ms")
	b.ReportMetric(getP99, "get-p99-ms")
	b.ReportMetric(listP50, "list10k-p50-ms")
	goalIn(b, "list10k-p99-ms", listP99, 25, false, " ms")
}
