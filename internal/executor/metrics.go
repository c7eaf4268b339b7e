package executor

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Outcomes of attempts, as taskactions_executor_attempts_total counts them.
const (
	outcomeSucceeded     = "succeeded"      // the plugin reported success
	outcomeCacheHit      = "cache_hit"      // ended with an earlier action's outputs, nothing run
	outcomeFailed        = "failed"         // the task failed (retried or not)
	outcomeSystemFailure = "system_failure" // the plugin or the system failed it
	outcomeLost          = "lost"           // lost with the server process that ran it
	outcomeTimedOut      = "timed_out"      // ran past metadata.timeout
	outcomeRefused       = "refused"        // never ran: invalid spec, no plugin, too large
)

// metrics are the executor's: its rounds, its queue and its attempts.
type metrics struct {
	latency  prometheus.Histogram
	depth    prometheus.Gauge
	wait     prometheus.Histogram
	retries  prometheus.Counter
	outcomes *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "taskactions_executor_reconcile_seconds", Help: "Time of one executor round of one action.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "taskactions_executor_queue_depth", Help: "Actions waiting in the executor's queue for a round.",
		}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "taskactions_executor_queue_wait_seconds", Help: "How long an action waited in the executor's queue before its round.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 20),
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "taskactions_executor_queue_retries_total", Help: "Rounds put back in the executor's queue after an error.",
		}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "taskactions_executor_attempts_total", Help: "Attempts the executor ended, by outcome.",
		}, []string{"outcome"}),
	}
	for _, o := range []string{outcomeSucceeded, outcomeCacheHit, outcomeFailed, outcomeSystemFailure, outcomeLost, outcomeTimedOut, outcomeRefused} {
		m.outcomes.WithLabelValues(o) // present from the start, at 0
	}
	if reg != nil {
		reg.MustRegister(m.latency, m.depth, m.wait, m.retries, m.outcomes)
	}
	return m
}

// queueMetrics gives the executor's workqueue the metrics above (client-go
// measures the queue; these only export it) and nothing for the rest.
type queueMetrics struct{ m *metrics }

var _ workqueue.MetricsProvider = queueMetrics{}

func (q queueMetrics) NewDepthMetric(string) workqueue.GaugeMetric       { return q.m.depth }
func (q queueMetrics) NewAddsMetric(string) workqueue.CounterMetric      { return noMetric{} }
func (q queueMetrics) NewLatencyMetric(string) workqueue.HistogramMetric { return q.m.wait }
func (q queueMetrics) NewRetriesMetric(string) workqueue.CounterMetric   { return q.m.retries }
func (q queueMetrics) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return noMetric{} // taskactions_executor_reconcile_seconds measures the rounds
}

func (q queueMetrics) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}

func (q queueMetrics) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}

// noMetric is a metric nobody reads.
type noMetric struct{}

func (noMetric) Inc()            {}
func (noMetric) Dec()            {}
func (noMetric) Set(float64)     {}
func (noMetric) Observe(float64) {}
