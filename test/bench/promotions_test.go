package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// echoStage is a Stage of n echo steps.
func echoStage(name string, n int) []byte {
	steps := make([]string, n)
	for i := range steps {
		steps[i] = `{"uses":"echo"}`
	}
	return fmt.Appendf(nil, `{"metadata":{"name":%q},"spec":{"requestedFreight":[{"origin":{"kind":"Warehouse","name":"w"},"sources":{"direct":true}}],`+
		`"promotionTemplate":{"spec":{"steps":[%s]}}}}`, name, strings.Join(steps, ","))
}

// getJSON decodes a GET into out.
func getJSON(c *http.Client, url string, out any) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return json.Unmarshal(b, out)
}

// postJSON posts body and decodes the answer into out.
func postJSON(c *http.Client, url string, body []byte, want int, out any) error {
	resp, err := c.Post(url, "application/json", strings.NewReader(string(body)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("POST %s: %s: %s", url, resp.Status, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

type object struct {
	Metadata struct{ Name string } `json:"metadata"`
	Status   struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// waitFor polls until done reports true, every interval.
func waitFor(b *testing.B, what string, interval time.Duration, done func() (bool, error)) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, err := done()
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(interval)
	}
}

// BenchmarkPromotion5Steps: from POST .../promotions to Succeeded, for a
// template of five echo steps, against the same five actions enqueued by
// hand one after the other (each when the one before succeeded, as the
// orchestrator does), in the same run: the orchestrator's cost.
func BenchmarkPromotion5Steps(b *testing.B) {
	s := startServer(b)
	c := s.client(&http.Transport{MaxIdleConnsPerHost: concurrency})
	p := s.url + "/api/v1/projects/bench"
	if err := post(c, p+"/stages", echoStage("five", 5), http.StatusCreated); err != nil {
		b.Fatal(err)
	}
	var f object
	if err := postJSON(c, p+"/freight", []byte(`{"origin":{"kind":"Warehouse","name":"w"},"images":[{"repoURL":"nginx","tag":"1"}]}`), http.StatusCreated, &f); err != nil {
		b.Fatal(err)
	}
	const reps = 20
	var promo, manual []time.Duration
	for i := range reps {
		start := time.Now()
		var pr object
		if err := postJSON(c, p+"/stages/five/promotions", fmt.Appendf(nil, `{"freight":%q}`, f.Metadata.Name), http.StatusCreated, &pr); err != nil {
			b.Fatal(err)
		}
		waitFor(b, "the Promotion", 2*time.Millisecond, func() (bool, error) {
			var got object
			err := getJSON(c, p+"/promotions/"+pr.Metadata.Name, &got)
			return got.Status.Phase == "Succeeded", err
		})
		promo = append(promo, time.Since(start))

		start = time.Now()
		run := fmt.Sprintf("manual%d", i)
		if err := post(c, s.url+"/api/v1/actions", enqueueEcho("bench", run, "root", ""), http.StatusCreated); err != nil {
			b.Fatal(err)
		}
		for k := range 5 {
			name := fmt.Sprintf("step-%d", k+1)
			if err := post(c, s.url+"/api/v1/actions", enqueueEcho("bench", run, name, "root"), http.StatusCreated); err != nil {
				b.Fatal(err)
			}
			waitFor(b, "an action", 2*time.Millisecond, func() (bool, error) {
				var a struct{ Phase string }
				err := getJSON(c, fmt.Sprintf("%s/domains/kargo/runs/%s/actions/%s", p, run, name), &a)
				return a.Phase == "SUCCEEDED", err
			})
		}
		manual = append(manual, time.Since(start))
	}
	slices.Sort(promo)
	slices.Sort(manual)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(promo[reps/2]), "promotion-p50-ms")
	b.ReportMetric(ms(manual[reps/2]), "by-hand-p50-ms")
	b.ReportMetric(ms(promo[reps/2])/ms(manual[reps/2]), "promotion/by-hand")
}

// enqueueEcho is an echo action in domain kargo (the domain Promotions
// run in), with a parent or not.
func enqueueEcho(project, run, action, parent string) []byte {
	p := ""
	if parent != "" {
		p = fmt.Sprintf(`,"parentActionName":%q`, parent)
	}
	return fmt.Appendf(nil, `{"action":{"actionId":{"run":{"project":%q,"domain":"kargo","name":%q},"name":%q}%s,"task":{"taskTemplate":{"type":"echo"}}}}`,
		project, run, action, p)
}

// BenchmarkPromotions100: 100 Promotions queued across 10 Stages (ten
// each, all at once; one runs at a time per Stage): the total time, and
// per Promotion the time from its POST to when it is seen Succeeded.
func BenchmarkPromotions100(b *testing.B) {
	s := startServer(b)
	c := s.client(&http.Transport{MaxIdleConnsPerHost: concurrency})
	p := s.url + "/api/v1/projects/queue"
	var f object
	if err := postJSON(c, p+"/freight", []byte(`{"origin":{"kind":"Warehouse","name":"w"},"images":[{"repoURL":"nginx","tag":"1"}]}`), http.StatusCreated, &f); err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		if err := post(c, p+"/stages", echoStage(fmt.Sprintf("s%d", i), 2), http.StatusCreated); err != nil {
			b.Fatal(err)
		}
	}
	var mu sync.Mutex
	posted := map[string]time.Time{}
	start := time.Now()
	runConcurrently(b, 100, func(i int) error {
		var pr object
		t := time.Now()
		err := postJSON(c, fmt.Sprintf("%s/stages/s%d/promotions", p, i%10), fmt.Appendf(nil, `{"freight":%q}`, f.Metadata.Name), http.StatusCreated, &pr)
		mu.Lock()
		posted[pr.Metadata.Name] = t
		mu.Unlock()
		return err
	})
	var lat []time.Duration
	seen := map[string]bool{}
	// A list of 100 Promotions every 50 ms: polling faster would measure
	// the polling.
	waitFor(b, "100 Promotions", 50*time.Millisecond, func() (bool, error) {
		var l struct{ Items []object }
		if err := getJSON(c, p+"/promotions", &l); err != nil {
			return false, err
		}
		for _, it := range l.Items {
			switch it.Status.Phase {
			case "Succeeded":
				if !seen[it.Metadata.Name] {
					seen[it.Metadata.Name] = true
					lat = append(lat, time.Since(posted[it.Metadata.Name]))
				}
			case "Failed", "Errored", "Aborted":
				return false, fmt.Errorf("Promotion %s ended %s", it.Metadata.Name, it.Status.Phase)
			}
		}
		return len(seen) == 100, nil
	})
	total := time.Since(start)
	slices.Sort(lat)
	b.ReportMetric(total.Seconds(), "total-s")
	b.ReportMetric(float64(lat[49].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[98].Milliseconds()), "p99-ms")
}
