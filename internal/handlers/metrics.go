package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"taskactions/internal/sse"

	"taskactions/internal/pipeline"
)

// Metrics is the server's Prometheus registry: its own, not the global one,
// which the embedded etcd and API server fill with their internals.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	streams  *prometheus.GaugeVec
	// How streams start, and why they reset (StreamStarted).
	starts, resets *prometheus.CounterVec
}

// Gauges are read at scrape time from the components that own the numbers.
type Gauges struct {
	QueueDepth    func() int
	EventsHandled func() int64
	// Caches are the pipelines of every resource kind.
	Caches []pipeline.Stats
}

// NewMetrics registers the server's metrics.
func NewMetrics(g Gauges) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskactions_http_requests_total", Help: "HTTP requests by route template, method and status.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "taskactions_http_request_duration_seconds", Help: "HTTP request latency by route template (streams: their lifetime).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"route", "method"}),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "taskactions_sse_open_streams", Help: "Open server-sent-event streams by kind.",
		}, []string{"kind"}),
	}
	for _, kind := range streamKinds() { // the operations table's, checked against the document
		m.streams.WithLabelValues(kind) // present at zero before the first stream
	}
	m.starts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskactions_sse_stream_starts_total",
		Help: "Streams started, by event and how: snapshot (no cursor), resumed (the cursor replayed from the journal), reset (a new snapshot; see taskactions_sse_resets_total).",
	}, []string{"event", "start"})
	m.resets = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskactions_sse_resets_total",
		Help: "Streams sent reset and a new snapshot, by event and reason: cursor-not-covered (the journal no longer reaches back: a replay miss), lagged (a slow reader whose mailbox overflowed).",
	}, []string{"event", "reason"})
	for _, event := range streamEvents() { // present at zero from the start
		for _, start := range []string{"snapshot", "resumed", "reset"} {
			m.starts.WithLabelValues(event, start)
		}
		for _, reason := range []string{sse.ResetNotCovered, sse.ResetLagged} {
			m.resets.WithLabelValues(event, reason)
		}
	}
	m.reg.MustRegister(m.requests, m.latency, m.streams, m.starts, m.resets,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if g.QueueDepth != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "taskactions_manager_queue_depth", Help: "Actions with a change waiting for a manager worker (the workqueue holds each action once).",
		}, func() float64 { return float64(g.QueueDepth()) }))
	}
	if g.EventsHandled != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "taskactions_manager_events_handled_total", Help: "TaskAction events the manager's workers finished (run service notifications).",
		}, func() float64 { return float64(g.EventsHandled()) }))
	}
	if len(g.Caches) > 0 {
		m.reg.MustRegister(cacheCollector(g.Caches))
	}
	return m
}

// cacheCollector reports each kind's pipeline, labelled by kind.
type cacheCollector []pipeline.Stats

var (
	cacheObjectsDesc = prometheus.NewDesc("taskactions_cache_objects",
		"Objects in the informer cache, by kind.", []string{"kind"}, nil)
	cachePublishedDesc = prometheus.NewDesc("taskactions_cache_events_published_total",
		"Events published to stream subscribers, by kind.", []string{"kind"}, nil)
	cacheSyncedDesc = prometheus.NewDesc("taskactions_cache_synced",
		"1 once the kind's cache is synced.", []string{"kind"}, nil)
)

func (c cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- cacheObjectsDesc
	ch <- cachePublishedDesc
	ch <- cacheSyncedDesc
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	for _, k := range c {
		synced := 0.0
		if k.HasSynced() {
			synced = 1
		}
		ch <- prometheus.MustNewConstMetric(cacheObjectsDesc, prometheus.GaugeValue, float64(k.Objects()), k.Name())
		ch <- prometheus.MustNewConstMetric(cachePublishedDesc, prometheus.CounterValue, float64(k.Published()), k.Name())
		ch <- prometheus.MustNewConstMetric(cacheSyncedDesc, prometheus.GaugeValue, synced, k.Name())
	}
}

// Registry lets other components (the executor) register their metrics.
func (m *Metrics) Registry() prometheus.Registerer { return m.reg }

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

func (m *Metrics) observe(route, method string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(d.Seconds())
}

// StreamOpened counts an open stream of a kind until the returned func is
// called.
func (m *Metrics) StreamOpened(kind string) (closed func()) {
	g := m.streams.WithLabelValues(kind)
	g.Inc()
	return g.Dec
}

// StreamStarted implements sse.Observer.
func (m *Metrics) StreamStarted(event string, resumed bool, reset string) {
	switch {
	case resumed:
		m.starts.WithLabelValues(event, "resumed").Inc()
	case reset != "":
		m.starts.WithLabelValues(event, "reset").Inc()
		m.resets.WithLabelValues(event, reset).Inc()
	default:
		m.starts.WithLabelValues(event, "snapshot").Inc()
	}
}
