package providers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// DefaultPrometheusTimeout is a prometheus metric's timeout when it has
// none (Rollouts' default).
const DefaultPrometheusTimeout = 30 * time.Second

// ResolvedPrometheusQuery is the key of the query in PrometheusMetadata.
const ResolvedPrometheusQuery = "ResolvedPrometheusQuery"

// PrometheusMetadata is what Rollouts' prometheus provider puts in a new
// MetricResult's metadata (GetMetadata): the query, as resolved, under
// ResolvedPrometheusQuery; nil when the metric has no prometheus query.
func PrometheusMetadata(m rolloutsapi.Metric) map[string]string {
	if m.Provider.Prometheus == nil || m.Provider.Prometheus.Query == "" {
		return nil
	}
	return map[string]string{ResolvedPrometheusQuery: m.Provider.Prometheus.Query}
}

// Prometheus takes one measurement of a prometheus metric
// (m.Provider.Prometheus), as Rollouts v1.10.2's prometheus provider does,
// with the Prometheus client library Rollouts uses
// (github.com/prometheus/client_golang/api):
//
//   - The query is an instant query at the current time, POST to
//     address + "/api/v1/query" (GET again on 403, 405 or 501); with
//     rangeQuery, a range query to /api/v1/query_range, start and end
//     being expr-lang expressions giving a time (now() - duration("5m")),
//     step a Go duration.
//   - The address must be a URL with a scheme and a host ("prometheus
//     address is not is url format", Rollouts' words); an empty one is
//     "prometheus address is not configured" (Rollouts would read
//     ARGO_ROLLOUTS_PROMETHEUS_ADDRESS; this server has no such default).
//   - headers are set on every request the query sends (redirects
//     included, as Rollouts' round tripper does); insecure skips TLS
//     verification (see c below).
//   - timeout (seconds, DefaultPrometheusTimeout when unset; negative is
//     refused) bounds the query as a deadline on its context, as in
//     Rollouts. 0 is the default too (in Rollouts it is a deadline already
//     passed, which fails every query).
//   - A scalar result is the value as Prometheus formats a sample
//     ("0.99"), and eval gets it as a float64. A vector is its samples'
//     values in order, "[0.99,1]" ("[]" when empty), and eval gets a
//     []float64 (empty, not nil, when the vector is); a matrix (range
//     query) is every sample of every series the same way. Other result
//     types are Error: "Prometheus metric type not supported".
//   - An error of the API is its type and message: "bad_data: parse
//     error ...", "server_error: server error: 500". Warnings go to the
//     measurement's metadata under "warnings", each quoted, comma
//     separated, as Rollouts puts them.
//
// Any failure, ctx ending included, makes the measurement Error with the
// error as its message; Prometheus never fails otherwise, and the
// measurement is always finished. The value is set only when the
// measurement is not Error.
//
// c is used as Web uses it (a shallow copy; its Transport, built on the
// http plugin's Allowlist, is cloned for insecure), with its Timeout kept.
// No proxy is added (Rollouts' transport uses the environment's). Response
// bodies are read up to MaxResponseBody.
//
// authentication is refused where Rollouts would use it, since this
// server can do neither: sigv4 (when the address contains
// "aps-workspaces", Amazon Managed Prometheus, and sigv4 is set; Rollouts
// ignores it otherwise, and so does this) and oauth2 (when its token URL
// is set; Rollouts' message when its client ID or secret is missing).
func Prometheus(ctx context.Context, c *http.Client, m rolloutsapi.Metric, eval Evaluator) rolloutsapi.Measurement {
	measurement := started()
	prom := m.Provider.Prometheus
	if prom == nil {
		return markError(measurement, errors.New("the metric has no prometheus provider"))
	}
	// Rollouts' provider factory: NewPrometheusAPI, then
	// NewPrometheusProvider; their errors are the measurement's.
	api, done, err := prometheusAPI(c, prom)
	if err != nil {
		return markError(measurement, err)
	}
	defer done()
	timeout := DefaultPrometheusTimeout
	if prom.Timeout != nil {
		if *prom.Timeout < 0 {
			return markError(measurement, errors.New("prometheus timeout should not be negative"))
		}
		if *prom.Timeout > 0 {
			timeout = time.Duration(*prom.Timeout) * time.Second
		}
	}

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	response, warnings, err := executePrometheusQuery(ctx, api, prom)
	if err != nil {
		return markError(measurement, err)
	}
	value, phase, err := processPrometheusResponse(m, eval, response)
	if err != nil {
		return markError(measurement, err)
	}
	measurement.Value = value
	if len(warnings) > 0 {
		quoted := make([]string, len(warnings))
		for i, w := range warnings {
			quoted[i] = `"` + w + `"`
		}
		measurement.Metadata = map[string]string{"warnings": strings.Join(quoted, ", ")}
	}
	measurement.Phase = phase
	return finish(measurement)
}

// prometheusAPI is Rollouts' NewPrometheusAPI over c.
func prometheusAPI(c *http.Client, prom *rolloutsapi.PrometheusMetric) (promv1.API, func(), error) {
	if prom.Address == "" {
		return nil, nil, errors.New("prometheus address is not configured")
	}
	if !isURL(prom.Address) {
		return nil, nil, errors.New("prometheus address is not is url format")
	}
	if strings.Contains(prom.Address, "aps-workspaces") && prom.Authentication.Sigv4 != (rolloutsapi.Sigv4Config{}) {
		return nil, nil, errors.New("prometheus authentication.sigv4 is not supported: this server cannot sign requests with AWS credentials")
	}
	if err := oauth2Refused("prometheus", prom.Authentication.OAuth2); err != nil {
		return nil, nil, err
	}
	client, done, err := measurementClient(c, 0, prom.Insecure)
	if err != nil {
		return nil, nil, err
	}
	rt := client.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	client.Transport = limitedRoundTripper{headersRoundTripper{headers: prom.Headers, next: rt}}
	apiClient, err := promapi.NewClient(promapi.Config{Address: prom.Address, Client: client})
	if err != nil {
		done()
		return nil, nil, err
	}
	return promv1.NewAPI(apiClient), done, nil
}

// isURL is Rollouts' IsUrl.
func isURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && u.Scheme != "" && u.Host != ""
}

// headersRoundTripper sets the metric's headers on every request (on a
// copy: a RoundTripper must not change its request).
type headersRoundTripper struct {
	headers []rolloutsapi.WebMetricHeader
	next    http.RoundTripper
}

func (h headersRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for _, header := range h.headers {
			r.Header.Set(header.Key, header.Value)
		}
	}
	return h.next.RoundTrip(r)
}

// limitedRoundTripper bounds response bodies to MaxResponseBody.
type limitedRoundTripper struct{ next http.RoundTripper }

func (l limitedRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	if resp.ContentLength > MaxResponseBody {
		resp.Body.Close()
		return nil, errBodyTooLarge
	}
	resp.Body = newLimitedBody(resp.Body)
	return resp, nil
}

// executePrometheusQuery is Rollouts' executeQuery.
func executePrometheusQuery(ctx context.Context, api promv1.API, prom *rolloutsapi.PrometheusMetric) (model.Value, promv1.Warnings, error) {
	if prom.RangeQuery != nil {
		start, err := evalTime(prom.RangeQuery.Start)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to parse rangeQuery.start as time: %w", err)
		}
		end, err := evalTime(prom.RangeQuery.End)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to parse rangeQuery.end as time: %w", err)
		}
		step, err := prom.RangeQuery.Step.Duration()
		if err != nil {
			return nil, nil, fmt.Errorf("failed to parse rangeQuery.step as duration: %w", err)
		}
		v, warnings, _, err := api.QueryRange(ctx, prom.Query, promv1.Range{Start: start, End: end, Step: step})
		return v, warnings, err
	}
	v, warnings, _, err := api.Query(ctx, prom.Query, time.Now())
	return v, warnings, err
}

// processPrometheusResponse is Rollouts' processResponse.
func processPrometheusResponse(m rolloutsapi.Metric, eval Evaluator, response model.Value) (string, rolloutsapi.AnalysisPhase, error) {
	switch value := response.(type) {
	case *model.Scalar:
		phase, err := eval(m, float64(value.Value))
		return value.Value.String(), phase, err
	case model.Matrix:
		var samples []model.SampleValue
		for _, stream := range value {
			if stream != nil {
				for _, s := range stream.Values {
					samples = append(samples, s.Value)
				}
			}
		}
		phase, err := eval(m, floats(samples))
		return samplesString(samples), phase, err
	case model.Vector:
		var samples []model.SampleValue
		for _, s := range value {
			if s != nil {
				samples = append(samples, s.Value)
			}
		}
		phase, err := eval(m, floats(samples))
		return samplesString(samples), phase, err
	default:
		return "", rolloutsapi.AnalysisPhaseError, errors.New("Prometheus metric type not supported") //nolint:staticcheck // Rollouts' message
	}
}

// floats is Rollouts' sampleValuesToFloatSlice: never nil.
func floats(samples []model.SampleValue) []float64 {
	out := make([]float64, 0, len(samples))
	for _, s := range samples {
		out = append(out, float64(s))
	}
	return out
}

// samplesString is Rollouts' sampleValuesToResultStr.
func samplesString(samples []model.SampleValue) string {
	out := make([]string, 0, len(samples))
	for _, s := range samples {
		out = append(out, s.String())
	}
	return "[" + strings.Join(out, ",") + "]"
}

// evalTime is Rollouts' evaluate.EvalTime: an expr-lang expression that
// must give a time.Time (now(), date(...), now() - duration("1h")).
func evalTime(expression string) (time.Time, error) {
	env := map[string]any{
		"isNaN": math.IsNaN,
		"isInf": func(f float64) bool { return math.IsInf(f, 0) },
	}
	unwrap := func(err error) error {
		if fileErr, ok := err.(*file.Error); ok {
			return errors.New(fileErr.Message)
		}
		return err
	}
	program, err := expr.Compile(expression, expr.Env(env))
	if err != nil {
		return time.Time{}, unwrap(err)
	}
	output, err := expr.Run(program, env)
	if err != nil {
		return time.Time{}, unwrap(err)
	}
	if t, ok := output.(time.Time); ok {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("expected time.Time, but got %T", output)
}
