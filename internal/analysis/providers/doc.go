// Package providers holds Argo Rollouts v1.10.2's metric providers web,
// prometheus and job, ported for the AnalysisRun runner: each takes one
// measurement of a metric (api/rollouts/v1alpha1) and returns it as
// Rollouts' provider would, with Rollouts' error messages.
//
//   - measure.go: what the providers share: Evaluator (the metric's
//     success and failure conditions, evaluated by the caller's function,
//     rules.Evaluate), Error measurements (Rollouts'
//     MarkMeasurementError), the HTTP client of one measurement, and
//     response bodies bounded to MaxResponseBody (1 MiB).
//   - web.go: Web, the webmetric provider.
//   - prometheus.go: Prometheus, the prometheus provider (instant and
//     range queries, through the Prometheus client library Rollouts uses),
//     and PrometheusMetadata.
//   - job.go: JobProcess, a job metric's Job mapped to one local process
//     of the server's process plugin (the image is not pulled), or
//     refused with a *JobSpecError; JobMeasurement, the measurement from
//     how the process ended.
//   - expand.go: the kubelet's $(VAR) expansion of command, args and env.
//
// A provider never fails: whatever goes wrong, the context ending
// included, is a measurement in phase Error whose message is the error,
// as in Rollouts. HTTP requests go through the *http.Client the caller
// passes, built on the http plugin's host allowlist
// (internal/executor/plugins/http's Allowlist): a metric calls only the
// hosts the operator allowed.
//
// Deviations from Rollouts are in the doc comments of Web, Prometheus,
// JobProcess and JobMeasurement.
package providers
