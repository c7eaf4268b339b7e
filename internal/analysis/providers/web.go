package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"time"

	"k8s.io/client-go/util/jsonpath"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// DefaultWebTimeout is a web metric's timeout when timeoutSeconds is not
// positive (Rollouts' default).
const DefaultWebTimeout = 10 * time.Second

// Web takes one measurement of a web metric (m.Provider.Web), as Rollouts
// v1.10.2's webmetric provider does:
//
//   - The request: method (GET when empty), url, each header set in order
//     (a later one of the same key replaces an earlier one), body as
//     given or jsonBody as given with Content-Type: application/json
//     (which replaces a Content-Type header). Body and jsonBody together,
//     or either with GET, are refused with Rollouts' messages.
//   - timeoutSeconds (DefaultWebTimeout when not positive) bounds the
//     whole exchange, body included: it replaces c's Timeout. insecure
//     skips TLS verification (see c below).
//   - jsonPath (default "{$}") is parsed with k8s.io/client-go's jsonpath
//     before the request; a parse error makes the measurement Error.
//   - A status outside 2xx is Error: "received non 2xx response code: N".
//   - A body that is not JSON is the value as it is, and the measurement
//     is Successful without evaluating any condition (Rollouts does so).
//   - Otherwise the first result of jsonPath over the decoded body (JSON
//     numbers are float64, objects map[string]any, arrays []any) is passed
//     to eval, and the value is that result JSON-encoded: 42, "up" (quoted,
//     a JSON string), {"a":1}. No result is Error: "result of web metric
//     produced no value"; a path that does not match is Error: "Could not
//     find JSONPath in body: ...".
//
// Any failure (the request, the body, the jsonPath, eval's error, ctx
// ending) makes the measurement Error with the error as its message, as
// Rollouts' MarkMeasurementError does; Web never fails otherwise, and the
// measurement is always finished (FinishedAt set). The value is set only
// when the measurement is not Error.
//
// c is the client the request is sent with: the caller builds it on the
// http plugin's Allowlist (internal/executor/plugins/http), so a metric
// calls only the hosts the operator allowed, redirects included. It is
// used through a shallow copy, with its Transport and CheckRedirect. For
// insecure metrics, its Transport must be an *http.Transport (or nil),
// which is cloned with InsecureSkipVerify; any other transport makes an
// insecure metric Error. No proxy is added. The body is read up to
// MaxResponseBody.
//
// authentication.oauth2 is refused (this server fetches no OAuth2 tokens;
// put a token in a header instead), with Rollouts' message when its
// client ID or secret is missing.
func Web(ctx context.Context, c *http.Client, m rolloutsapi.Metric, eval Evaluator) rolloutsapi.Measurement {
	measurement := started()
	web := m.Provider.Web
	if web == nil {
		return markError(measurement, errors.New("the metric has no web provider"))
	}
	// Rollouts' provider factory: NewWebMetricHttpClient, then
	// NewWebMetricJsonParser; their errors are the measurement's.
	if err := oauth2Refused("web metric", web.Authentication.OAuth2); err != nil {
		return markError(measurement, err)
	}
	timeout := DefaultWebTimeout
	if web.TimeoutSeconds > 0 {
		timeout = time.Duration(web.TimeoutSeconds) * time.Second
	}
	client, done, err := measurementClient(c, timeout, web.Insecure)
	if err != nil {
		return markError(measurement, err)
	}
	defer done()
	parser, err := webJSONParser(web.JSONPath)
	if err != nil {
		return markError(measurement, err)
	}

	method := rolloutsapi.WebMetricMethodGet
	if web.Method != "" {
		method = web.Method
	}
	stringBody, jsonBody := web.Body, web.JSONBody
	if stringBody != "" && jsonBody != nil {
		return markError(measurement, fmt.Errorf("use either Body or JSONBody; both cannot exists for WebMetric payload"))
	} else if (stringBody != "" || jsonBody != nil) && method == rolloutsapi.WebMetricMethodGet {
		return markError(measurement, fmt.Errorf("Body/JSONBody can only be used with POST or PUT WebMetric Method types")) //nolint:staticcheck // Rollouts' message
	}
	var body io.Reader
	if stringBody != "" {
		body = strings.NewReader(stringBody)
	} else if jsonBody != nil {
		body = bytes.NewReader(jsonBody)
	}

	request, err := http.NewRequestWithContext(ctx, string(method), web.URL, body)
	if err != nil {
		return markError(measurement, err)
	}
	request.Header = make(http.Header)
	for _, header := range web.Headers {
		request.Header.Set(header.Key, header.Value)
	}
	if jsonBody != nil {
		request.Header.Set("Content-Type", "application/json")
	}

	response, err := client.Do(request)
	if err != nil {
		return markError(measurement, err)
	}
	defer response.Body.Close()
	if response.StatusCode < 200 || response.StatusCode >= 300 {
		return markError(measurement, fmt.Errorf("received non 2xx response code: %v", response.StatusCode))
	}

	value, phase, err := parseWebResponse(m, eval, parser, response)
	if err != nil {
		return markError(measurement, err)
	}
	measurement.Value = value
	measurement.Phase = phase
	return finish(measurement)
}

// webJSONParser is Rollouts' NewWebMetricJsonParser.
func webJSONParser(path string) (*jsonpath.JSONPath, error) {
	parser := jsonpath.New("metrics")
	if path == "" {
		path = "{$}"
	}
	return parser, parser.Parse(path)
}

// parseWebResponse is Rollouts' parseResponse, reading at most
// MaxResponseBody bytes.
func parseWebResponse(m rolloutsapi.Metric, eval Evaluator, parser *jsonpath.JSONPath, response *http.Response) (string, rolloutsapi.AnalysisPhase, error) {
	bodyBytes, err := readBody(response)
	if errors.Is(err, errBodyTooLarge) {
		return "", rolloutsapi.AnalysisPhaseError, err
	} else if err != nil {
		return "", rolloutsapi.AnalysisPhaseError, fmt.Errorf("Received no bytes in response: %v", err) //nolint:staticcheck // Rollouts' message
	}
	var data any
	if err := json.Unmarshal(bodyBytes, &data); err != nil {
		// non JSON body return as string
		return string(bodyBytes), rolloutsapi.AnalysisPhaseSuccessful, nil
	}
	fullResults, err := parser.FindResults(data)
	if err != nil {
		return "", rolloutsapi.AnalysisPhaseError, fmt.Errorf("Could not find JSONPath in body: %s", err) //nolint:staticcheck // Rollouts' message
	}
	val, valString, err := webValue(fullResults)
	if err != nil {
		return "", rolloutsapi.AnalysisPhaseError, err
	}
	phase, err := eval(m, val)
	return valString, phase, err
}

// webValue is Rollouts' getValue: the first result, and its JSON.
func webValue(fullResults [][]reflect.Value) (any, string, error) {
	for _, results := range fullResults {
		for _, r := range results {
			var val any
			if r.IsValid() { // a JSON null is an invalid Value; Rollouts would panic
				val = r.Interface()
			}
			valBytes, err := json.Marshal(val)
			return val, string(valBytes), err
		}
	}
	return nil, "", errors.New("result of web metric produced no value")
}

// oauth2Refused refuses an OAuth2 configuration (set when its token URL
// is, as Rollouts decides), with Rollouts' message for a missing
// parameter.
func oauth2Refused(what string, cfg rolloutsapi.OAuth2Config) error {
	if cfg.TokenURL == "" {
		return nil
	}
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return errors.New("missing mandatory parameter in metric for OAuth2 setup")
	}
	return fmt.Errorf("%s authentication.oauth2 is not supported: this server does not fetch OAuth2 tokens (send a token in a header instead)", what)
}
