package bench

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"
)

// BenchmarkAuthOverhead: what authentication and authorization cost,
// against a server with --auth=none in the same run. GET of one action,
// p50 and p99 over 4,000 requests each, interleaved so that the machine's
// noise falls on all alike: with a bearer token, with a session cookie,
// and with no credential on the open server. Then SSE fan-out (1,000
// streams of one parent, 20 updates/s for 10 s), server CPU per 1,000
// deliveries, on each server.
func BenchmarkAuthOverhead(b *testing.B) {
	on := startServer(b)
	off := startServerEnv(b, "TASKACTIONS_AUTH=none")
	for _, s := range []*server{on, off} {
		if err := post(s.client(&http.Transport{}), s.url+"/api/v1/actions", enqueueBody("auth", "r", "a0", ""), http.StatusCreated); err != nil {
			b.Fatal(err)
		}
	}
	cookie := sessionCookie(b, on)
	path := "/api/v1/projects/auth/domains/dev/runs/r/actions/a0"
	kinds := []struct {
		name string
		s    *server
		set  func(*http.Request)
	}{
		{"bearer", on, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+on.token) }},
		{"cookie", on, func(r *http.Request) { r.AddCookie(cookie) }},
		{"none", off, func(*http.Request) {}},
	}
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	lat := make([][]time.Duration, len(kinds))
	for round := range 4000 {
		for i, k := range kinds {
			req, _ := http.NewRequest(http.MethodGet, k.s.url+path, nil)
			k.set(req)
			start := time.Now()
			resp, err := httpc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("%s: %s", k.name, resp.Status)
			}
			if round >= 100 { // warm-up
				lat[i] = append(lat[i], time.Since(start))
			}
		}
	}
	pct := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000
	}
	none50, none99 := pct(lat[2], 0.5), pct(lat[2], 0.99)
	for i, k := range kinds[:2] {
		p50, p99 := pct(lat[i], 0.5), pct(lat[i], 0.99)
		b.ReportMetric(p50, "get-"+k.name+"-p50-ms")
		b.ReportMetric(p99, "get-"+k.name+"-p99-ms")
		b.ReportMetric(p50/none50, "p50-"+k.name+"/none")
		b.ReportMetric(p99/none99, "p99-"+k.name+"/none")
	}
	b.ReportMetric(none50, "get-none-p50-ms")
	b.ReportMetric(none99, "get-none-p99-ms")

	tr := func() *http.Transport { return &http.Transport{} }
	rOn := measure(b, serverTarget(b, on, tr, 0), 1000)
	rOff := measure(b, serverTarget(b, off, tr, 0), 1000)
	b.ReportMetric(rOn.cpuPer1000, "fanout-on-cpu-ms/1000ev")
	b.ReportMetric(rOff.cpuPer1000, "fanout-none-cpu-ms/1000ev")
	b.ReportMetric(rOn.cpuPer1000/rOff.cpuPer1000, "fanout-cpu-on/none")
	b.ReportMetric(rOn.p99/rOff.p99, "fanout-p99-on/none")
}

// sessionCookie logs in with the admin token, as the dashboard does.
func sessionCookie(b *testing.B, s *server) *http.Cookie {
	b.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v1/session", bytes.NewReader([]byte(`{"token":"`+s.token+`"}`)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		return c
	}
	b.Fatalf("no session cookie: %s", resp.Status)
	return nil
}
