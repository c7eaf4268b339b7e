package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const (
	warehouseCount    = 100
	warehouseInterval = 2 * time.Second
	warehouseWindow   = 20 * time.Second
)

// BenchmarkWarehouses100: the Warehouse controller polling 100 image
// subscriptions (one repository of three tags each, on a registry the
// benchmark serves in process) every 2 s for 20 s. The server's CPU per
// poll, with its idle CPU in a window as long taken off, against the
// floor: the same polls (list the tags, HEAD each) made directly with
// go-containerregistry from this process, with the registry's own CPU
// (measured while the server polled) taken off. And its RSS with the 100
// Warehouses, against before them. Then the time from a new tag pushed to
// its Freight on the Warehouse's stream, when a refresh is asked at once
// (as a registry's webhook would).
func BenchmarkWarehouses100(b *testing.B) {
	s := startServer(b)
	c := s.client(&http.Transport{})
	var lists atomic.Int64
	reg := httptest.NewServer(countLists(registry.New(registry.Logger(log.New(io.Discard, "", 0))), &lists))
	b.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	repos := make([]string, warehouseCount)
	for i := range repos {
		repos[i] = fmt.Sprintf("%s/app%d", host, i)
		for _, tag := range []string{"1.0.0", "1.0.1", "1.0.2"} {
			pushImage(b, repos[i], tag)
		}
	}
	p := s.url + "/api/v1/projects/whbench"
	if err := post(c, p+"/stages", []byte(`{"metadata":{"name":"s"},"spec":{"requestedFreight":[{"origin":{"kind":"Warehouse","name":"w0"},"sources":{"direct":true}}]}}`), http.StatusCreated); err != nil {
		b.Fatal(err)
	}

	idleCPU := cpuOver(b, s, warehouseWindow)
	rss0 := s.rssBytes(b)
	for i, repo := range repos {
		doc := fmt.Appendf(nil, `{"metadata":{"name":"w%d"},"spec":{"interval":%q,"subscriptions":[{"image":{"repoURL":%q}}]}}`, i, warehouseInterval, repo)
		if err := post(c, p+"/warehouses", doc, http.StatusCreated); err != nil {
			b.Fatal(err)
		}
	}
	waitFor(b, "every Warehouse's first Freight", 100*time.Millisecond, func() (bool, error) {
		var l struct {
			Items []struct {
				Status struct{ LastFreightID string } `json:"status"`
			} `json:"items"`
		}
		err := getJSON(c, p+"/warehouses", &l)
		return len(l.Items) == warehouseCount && !slices.ContainsFunc(l.Items, func(w struct {
			Status struct{ LastFreightID string } `json:"status"`
		}) bool {
			return w.Status.LastFreightID == ""
		}), err
	})

	lists0, self0 := lists.Load(), selfCPU()
	pollCPU := cpuOver(b, s, warehouseWindow)
	polls, registryCPU := lists.Load()-lists0, selfCPU()-self0
	rss1 := s.rssBytes(b)
	serverPerPoll := (pollCPU - idleCPU) / float64(polls) * 1000

	self0 = selfCPU()
	for i := range polls {
		pollDirect(b, repos[int(i)%len(repos)])
	}
	floorPerPoll := (selfCPU() - self0 - registryCPU) / float64(polls) * 1000

	b.ReportMetric(float64(polls), "polls")
	b.ReportMetric(serverPerPoll, "server-cpu-ms/poll")
	b.ReportMetric(floorPerPoll, "floor-cpu-ms/poll")
	b.ReportMetric(serverPerPoll/floorPerPoll, "server/floor")
	b.ReportMetric((rss1-rss0)/warehouseCount/1024, "rss-KiB/warehouse")
	b.ReportMetric(rss1/(1<<20), "rss-MB")
	b.ReportMetric(tagToStream(b, s, c, p, repos[0]), "tag-to-stream-ms")
}

// countLists counts tag listings: one per poll of a subscription.
func countLists(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			n.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

func pushImage(b *testing.B, repo, tag string) {
	img, err := random.Image(64, 1)
	must(b, err)
	ref, err := name.NewTag(repo + ":" + tag)
	must(b, err)
	must(b, remote.Write(ref, img))
}

// pollDirect is one poll as the controller makes it, by hand: the tags,
// then a HEAD of each.
func pollDirect(b *testing.B, repo string) {
	r, err := name.NewRepository(repo)
	must(b, err)
	tags, err := remote.List(r)
	must(b, err)
	for _, t := range tags {
		_, err := remote.Head(r.Tag(t))
		must(b, err)
	}
}

// cpuOver is the server's CPU seconds over a window.
func cpuOver(b *testing.B, s *server, d time.Duration) float64 {
	c0 := s.cpuSeconds(b)
	time.Sleep(d)
	return s.cpuSeconds(b) - c0
}

// selfCPU is this process's CPU seconds so far.
func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// tagToStream is the median, over five tags, of the time from a tag
// pushed (and a refresh asked) to the Warehouse's event on the project's
// warehouse stream that names new Freight.
func tagToStream(b *testing.B, s *server, c *http.Client, p, repo string) float64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p+"/warehouse-events", nil)
	must(b, err)
	resp, err := c.Do(req)
	must(b, err)
	defer resp.Body.Close()
	freight := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Metadata struct{ Name string }          `json:"metadata"`
				Status   struct{ LastFreightID string } `json:"status"`
			}
			if json.Unmarshal([]byte(data), &ev) == nil && ev.Metadata.Name == "w0" {
				freight <- ev.Status.LastFreightID
			}
		}
	}()
	current := <-freight // the snapshot's
	var times []float64
	for i := range 5 {
		start := time.Now()
		pushImage(b, repo, fmt.Sprintf("1.1.%d", i))
		must(b, post(c, p+"/warehouses/w0/refresh", nil, http.StatusOK))
		for id := range freight {
			if id != current {
				current = id
				break
			}
		}
		times = append(times, float64(time.Since(start).Microseconds())/1000)
	}
	slices.Sort(times)
	return times[len(times)/2]
}
