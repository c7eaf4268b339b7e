package bench

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// spanSink is an OTLP/HTTP traces endpoint in the benchmark's process: it
// decodes each batch (as a collector would, so the server's exporter sees
// a real answer) and counts the spans.
type spanSink struct {
	*httptest.Server
	spans atomic.Int64
}

func newSpanSink(b *testing.B) *spanSink {
	s := &spanSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				s.spans.Add(int64(len(ss.Spans)))
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	b.Cleanup(s.Close)
	return s
}

// BenchmarkTracingOverhead: what OpenTelemetry tracing costs, against a
// server with tracing off in the same run. One server exports every span
// (OTEL_EXPORTER_OTLP_ENDPOINT, the SDK's default batching) to a receiver
// in this process; the other has no endpoint, so tracing is off. Each runs
// against a control plane of its own in another process (startSplit), so
// its CPU is its own work, not etcd's and the API server's.
//
//   - Enqueue: 1,500 REST enqueues at concurrency 16 on each, in rounds
//     that alternate which goes first (after a warm-up of 200): the rate, p50 and p99
//     of one enqueue, and the server's CPU per 1,000 enqueues (traced, an
//     enqueue has its request's span and its enqueue's, and stores its
//     context on the object).
//   - Fan-out: 1,000 streams of one parent, 20 updates/s for 10 s
//     (measure): server CPU per 1,000 deliveries and p99. The deliveries
//     have no spans; the status writes that cause them do.
func BenchmarkTracingOverhead(b *testing.B) {
	sink := newSpanSink(b)
	_, on := startSplit(b, "OTEL_EXPORTER_OTLP_ENDPOINT="+sink.URL, "OTEL_SERVICE_NAME=taskactions-bench")
	_, off := startSplit(b, "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
	type named struct {
		name string
		s    *server
	}
	servers := []named{{"on", on}, {"off", off}}
	const perRound, rounds = 1500, 4
	rate := map[string]float64{}
	cpu := map[string]float64{}
	lat := map[string]*latencies{"on": {}, "off": {}}
	for round := range rounds + 1 { // round 0 warms both up
		n := perRound
		if round == 0 {
			n = 200
		}
		order := servers
		if round%2 == 1 {
			order = []named{servers[1], servers[0]}
		}
		for _, sv := range order {
			httpc := sv.s.client(&http.Transport{MaxIdleConnsPerHost: concurrency})
			cpu0 := sv.s.cpuSeconds(b)
			r := runConcurrently(b, n, func(i int) error {
				start := time.Now()
				err := post(httpc, sv.s.url+"/api/v1/actions", enqueueBody("trace", fmt.Sprintf("r%d", round), fmt.Sprintf("a%d", i), ""), http.StatusCreated)
				if round > 0 {
					lat[sv.name].add(time.Since(start))
				}
				return err
			})
			if round > 0 {
				rate[sv.name] += r / rounds
				cpu[sv.name] += (sv.s.cpuSeconds(b) - cpu0) * 1000 / float64(n*rounds) * 1000
			}
		}
	}
	for _, sv := range servers {
		detail(b, "enqueue, tracing %s: %.0f/s, p50 %.2f ms, p99 %.2f ms, %.0f CPU-ms per 1,000 enqueues",
			sv.name, rate[sv.name], lat[sv.name].percentile(0.5), lat[sv.name].percentile(0.99), cpu[sv.name])
		b.ReportMetric(rate[sv.name], "enqueue-"+sv.name+"/s")
		b.ReportMetric(lat[sv.name].percentile(0.5), "enqueue-"+sv.name+"-p50-ms")
		b.ReportMetric(lat[sv.name].percentile(0.99), "enqueue-"+sv.name+"-p99-ms")
		b.ReportMetric(cpu[sv.name], "enqueue-"+sv.name+"-cpu-ms/1000")
	}
	b.ReportMetric(rate["on"]/rate["off"], "enqueue-rate-on/off")
	b.ReportMetric(lat["on"].percentile(0.99)/lat["off"].percentile(0.99), "enqueue-p99-on/off")
	b.ReportMetric(cpu["on"]/cpu["off"], "enqueue-cpu-on/off")

	tr := func() *http.Transport { return &http.Transport{} }
	rOn := measure(b, serverTarget(b, on, tr, 0), 1000)
	rOff := measure(b, serverTarget(b, off, tr, 0), 1000)
	b.ReportMetric(rOn.cpuPer1000, "fanout-on-cpu-ms/1000ev")
	b.ReportMetric(rOff.cpuPer1000, "fanout-off-cpu-ms/1000ev")
	b.ReportMetric(rOn.cpuPer1000/rOff.cpuPer1000, "fanout-cpu-on/off")
	b.ReportMetric(rOn.p99/rOff.p99, "fanout-p99-on/off")

	// The spans went out: at least the request's and the enqueue's of each
	// enqueue on the server that traces (the last batch may still wait).
	time.Sleep(6 * time.Second)
	spans := sink.spans.Load()
	detail(b, "the receiver got %d spans", spans)
	if want := int64(2 * perRound * rounds); spans < want {
		b.Errorf("the receiver got %d spans, want at least %d: was tracing on?", spans, want)
	}
}
