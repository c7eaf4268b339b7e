package providers

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// Evaluator decides a measurement's phase from the value a provider
// measured: Rollouts' evaluate.EvaluateResult over the metric's
// successCondition and failureCondition (rules.Evaluate). The value is
// what Rollouts' provider passes: see Web and Prometheus. An error makes
// the measurement Error, with the error as its message.
type Evaluator func(m rolloutsapi.Metric, value any) (rolloutsapi.AnalysisPhase, error)

// MaxResponseBody bounds the response body a measurement reads: 1 MiB.
// A longer body makes the measurement Error (Rollouts reads any length).
const MaxResponseBody = 1 << 20

// errBodyTooLarge: a response body passed MaxResponseBody.
var errBodyTooLarge = fmt.Errorf("response body exceeds %d bytes", MaxResponseBody)

// started is a new measurement, started now.
func started() rolloutsapi.Measurement {
	now := metav1.Now()
	return rolloutsapi.Measurement{StartedAt: &now}
}

// markError is Rollouts' metricutil.MarkMeasurementError: the measurement
// is Error, with err as its message, finished now unless it was already.
func markError(m rolloutsapi.Measurement, err error) rolloutsapi.Measurement {
	m.Phase = rolloutsapi.AnalysisPhaseError
	m.Message = err.Error()
	if m.FinishedAt == nil {
		now := metav1.Now()
		m.FinishedAt = &now
	}
	return m
}

// finish marks a measurement finished now.
func finish(m rolloutsapi.Measurement) rolloutsapi.Measurement {
	now := metav1.Now()
	m.FinishedAt = &now
	return m
}

// measurementClient is c for one measurement: a shallow copy (so c's
// Transport and CheckRedirect, the host allowlist, stay), with timeout as
// its Timeout when timeout > 0 and, when insecure, a clone of c's
// transport that skips TLS verification (Rollouts' "insecure"). That needs
// c's Transport to be an *http.Transport (or nil: http.DefaultTransport).
// done releases the clone's connections.
func measurementClient(c *http.Client, timeout time.Duration, insecure bool) (cc *http.Client, done func(), err error) {
	if c == nil {
		return nil, nil, errors.New("no HTTP client to measure with")
	}
	copied := *c
	if timeout > 0 {
		copied.Timeout = timeout
	}
	if !insecure {
		return &copied, func() {}, nil
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		return nil, nil, fmt.Errorf("insecure is not supported: the HTTP client's transport (%T) cannot be told to skip TLS verification", rt)
	}
	t = t.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{}
	}
	t.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // the metric's choice, as in Rollouts
	copied.Transport = t
	return &copied, t.CloseIdleConnections, nil
}

// limitedBody is a response body that fails with errBodyTooLarge once
// more than MaxResponseBody bytes have been read from it.
type limitedBody struct {
	io.ReadCloser
	left int64 // bytes still allowed, plus one
}

func newLimitedBody(rc io.ReadCloser) *limitedBody {
	return &limitedBody{ReadCloser: rc, left: MaxResponseBody + 1}
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left <= 0 {
		return n, errBodyTooLarge
	}
	return n, err
}

// readBody reads a response body of at most MaxResponseBody bytes.
func readBody(resp *http.Response) ([]byte, error) {
	if resp.ContentLength > MaxResponseBody {
		return nil, errBodyTooLarge
	}
	return io.ReadAll(newLimitedBody(resp.Body))
}
