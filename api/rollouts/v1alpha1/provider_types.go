package v1alpha1

// The metric providers (Rollouts v1.10.2 analysis_types.go). Those this
// server measures with, or will (web, job, prometheus), are Rollouts'
// types field for field. The others (Kayenta, Datadog, Wavefront, New
// Relic, CloudWatch, Graphite, InfluxDB, SkyWalking, and plugins) are
// kept as raw JSON: Rollouts' CRD validates and prunes them, and an
// object read and written back here keeps them byte for byte, though no
// code here reads them.

import (
	"encoding/json"

	batchv1 "k8s.io/api/batch/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MetricProvider which external system to use to verify the analysis
// Only one of the fields in this struct should be non-nil
type MetricProvider struct {
	// Prometheus specifies the prometheus metric to query
	Prometheus *PrometheusMetric `json:"prometheus,omitempty"`
	// Web specifies a generic HTTP web metric
	Web *WebMetric `json:"web,omitempty"`
	// Job specifies the job metric run
	Job *JobMetric `json:"job,omitempty"`

	// Providers not run here, as raw JSON.
	Kayenta    *apiextensionsv1.JSON `json:"kayenta,omitempty"`
	Datadog    *apiextensionsv1.JSON `json:"datadog,omitempty"`
	Wavefront  *apiextensionsv1.JSON `json:"wavefront,omitempty"`
	NewRelic   *apiextensionsv1.JSON `json:"newRelic,omitempty"`
	CloudWatch *apiextensionsv1.JSON `json:"cloudWatch,omitempty"`
	Graphite   *apiextensionsv1.JSON `json:"graphite,omitempty"`
	Influxdb   *apiextensionsv1.JSON `json:"influxdb,omitempty"`
	SkyWalking *apiextensionsv1.JSON `json:"skywalking,omitempty"`
	// Plugin specifies the hashicorp go-plugin metric to query: one entry,
	// named for the plugin, whose value is the plugin's config.
	Plugin map[string]apiextensionsv1.JSON `json:"plugin,omitempty"`
}

// PrometheusMetric defines the prometheus query to perform canary analysis
type PrometheusMetric struct {
	// Address is the HTTP address and port of the prometheus server
	Address string `json:"address,omitempty"`
	// Query is a raw prometheus query to perform
	Query string `json:"query,omitempty"`
	// Authentication details
	// +optional
	Authentication Authentication `json:"authentication,omitempty"`
	// Timeout represents the duration within which a prometheus query should complete. It is expressed in seconds.
	// +optional
	Timeout *int64 `json:"timeout,omitempty"`
	// Insecure skips host TLS verification
	Insecure bool `json:"insecure,omitempty"`
	// Headers are optional HTTP headers to use in the request
	// +optional
	Headers []WebMetricHeader `json:"headers,omitempty"`
	// Arguments for prometheus
	// +optional
	RangeQuery *PrometheusRangeQueryArgs `json:"rangeQuery,omitempty"`
}

// PrometheusRangeQueryArgs are the arguments of a prometheus range query.
type PrometheusRangeQueryArgs struct {
	// The start time to query in expr format e.g. now(), now() - duration("1h"), now() - duration("{{args.lookback_duration}}")
	Start string `json:"start,omitempty"`
	// The end time to query in expr format e.g. now(), now() - duration("1h"), now() - duration("{{args.lookback_duration}}")
	End string `json:"end,omitempty"`
	// The maximum time between two slices from the start to end (e.g. 30s, 5m, 1h).
	Step DurationString `json:"step,omitempty"`
}

// Authentication method
type Authentication struct {
	// Sigv4 Config is the aws SigV4 configuration to use for SigV4 signing if using Amazon Managed Prometheus
	// +optional
	Sigv4 Sigv4Config `json:"sigv4,omitempty"`
	// OAuth2 config
	// +optional
	OAuth2 OAuth2Config `json:"oauth2,omitempty"`
}

// OAuth2Config is an OAuth2 client-credentials configuration.
type OAuth2Config struct {
	// OAuth2 provider token URL
	TokenURL string `json:"tokenUrl,omitempty"`
	// OAuth2 client ID
	ClientID string `json:"clientId,omitempty"`
	// OAuth2 client secret
	ClientSecret string `json:"clientSecret,omitempty"`
	// OAuth2 scopes
	// +optional
	Scopes []string `json:"scopes,omitempty"`
}

// Sigv4Config is an AWS SigV4 signing configuration.
type Sigv4Config struct {
	// Region is the AWS Region to sign the SigV4 Request
	Region string `json:"region,omitempty"`
	// Profile is the Credential Profile used to sign the SigV4 Request
	Profile string `json:"profile,omitempty"`
	// RoleARN is the IAM role used to sign the SIgV4 Request
	RoleARN string `json:"roleArn,omitempty"`
}

// WebMetric is a generic HTTP request whose answer is the measurement.
type WebMetric struct {
	// Method is the method of the web metric (empty defaults to GET)
	Method WebMetricMethod `json:"method,omitempty"`
	// URL is the address of the web metric
	URL string `json:"url"`
	// Headers are optional HTTP headers to use in the request
	Headers []WebMetricHeader `json:"headers,omitempty"`
	// Body is the body of the web metric (must be POST/PUT)
	Body string `json:"body,omitempty"`
	// TimeoutSeconds is the timeout for the request in seconds (default: 10)
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
	// JSONPath is a JSON Path to use as the result variable (default: "{$}")
	JSONPath string `json:"jsonPath,omitempty"`
	// Insecure skips host TLS verification
	Insecure bool `json:"insecure,omitempty"`
	// JSONBody is the body of the web metric in a json format (method must be POST/PUT)
	JSONBody json.RawMessage `json:"jsonBody,omitempty"`
	// Authentication details
	// +optional
	Authentication Authentication `json:"authentication,omitempty"`
}

// WebMetricMethod is the available HTTP methods
type WebMetricMethod string

// Possible HTTP method values
const (
	WebMetricMethodGet  WebMetricMethod = "GET"
	WebMetricMethodPost WebMetricMethod = "POST"
	WebMetricMethodPut  WebMetricMethod = "PUT"
)

// WebMetricHeader is one header of a web or prometheus request.
type WebMetricHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// JobMetric defines a job to run which acts as a metric
type JobMetric struct {
	Metadata metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     batchv1.JobSpec   `json:"spec"`
}
