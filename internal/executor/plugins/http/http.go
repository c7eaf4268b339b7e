// Package http is the http plugin: Kargo's http promotion step, run as a
// task. Its template's custom field is the step's (evaluated) config, with
// Kargo's field names (see Config); a round sends the request and decides
// from the response, as Kargo's http step runner does:
//
//   - successExpression and failureExpression are expr-lang expressions
//     over response: {status (an int64), header(name) (the first value),
//     headers (the header map), body}. body is the parsed JSON when the
//     response's Content-Type is application/json and the body is a JSON
//     object or array, else an empty map.
//   - With both set, each is evaluated; with one, the other is its
//     negation; with neither, success is a 2xx status and failure any other.
//   - Success, and not failure: the step succeeded; its outputs, each
//     fromExpression evaluated over the same response, are the action's
//     outputs (outputs.json, by name).
//   - Failure: the step failed for good (Kargo's terminal error).
//   - Neither (possible only with both expressions set): the step is still
//     running; the request is sent again after PollInterval.
//   - An error on the way (the request cannot be sent, the body is too
//     large or not JSON, an expression does not evaluate to a boolean) is
//     Kargo's "errored": a retryable failure, so the template's retries
//     decide. An invalid config is a permanent failure (InvalidSpec), and
//     so is a host the allowlist refuses (HostNotAllowed).
//
// Only hosts the Allowlist admits are called, checked on the URL, on every
// redirect and on the addresses names resolve to; no proxy is used.
// Response bodies are read up to MaxBody (Kargo's 2 MiB). Header values
// and query strings may be secrets: they are never logged nor put in
// messages.
package http

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"taskactions/internal/executor/plugins"
	"taskactions/internal/tracing"
)

// Defaults of Plugin's settings.
const (
	// DefaultPollInterval is how long a running step waits before the next
	// request. (Kargo requeues a running Promotion after minutes; a step
	// here is its own action and can poll sooner.)
	DefaultPollInterval = 5 * time.Second
	// DefaultMaxBody is Kargo's bound on a response body.
	DefaultMaxBody = 2 << 20
	maxRedirects   = 10
)

// Plugin is the http plugin. Create it with New; the exported fields may
// be changed before its first use.
type Plugin struct {
	PollInterval time.Duration
	MaxBody      int64
	Resolver     Resolver
	Now          func() time.Time

	allow *Allowlist

	mu       sync.Mutex
	decided  map[string]decision // ended attempts, by key
	inflight plugins.Inflight    // requests under way
}

// A decision is kept a while so that a repeated round of an ended attempt
// (its status write failed) reports the same end without sending the
// request again.
type decision struct {
	tr plugins.Transition
	at time.Time
}

const decisionTTL = 10 * time.Minute

// State is the persisted plugin state of a polling step.
type State struct {
	FirstRequest, LastRequest time.Time
	Requests                  uint32
}

const stateVersion = 1

// New returns the plugin calling the hosts allow admits (see Allowlist;
// empty: loopback only).
func New(allow []string) (*Plugin, error) {
	al, err := ParseAllowlist(allow)
	if err != nil {
		return nil, err
	}
	return &Plugin{
		PollInterval: DefaultPollInterval, MaxBody: DefaultMaxBody, Resolver: net.DefaultResolver,
		allow: al, decided: map[string]decision{},
	}, nil
}

func key(tc *plugins.TaskContext) string { return plugins.AttemptKey(tc) }

func (p *Plugin) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Handle sends the request (unless the last one of a polling step was
// less than PollInterval ago) and decides from the response.
func (p *Plugin) Handle(ctx context.Context, tc *plugins.TaskContext) (plugins.Transition, error) {
	k, now := key(tc), p.now()
	p.mu.Lock()
	d, done := p.decided[k]
	p.mu.Unlock()
	if done {
		return d.tr, nil
	}
	cfg, err := parseConfig(tc.Template.Custom)
	if err != nil {
		return p.end(k, now, plugins.PhasePermanentFailure, 0, "InvalidSpec", err.Error()), nil
	}
	var st State
	if _, ok, err := tc.LoadState(&st); err != nil {
		return plugins.Transition{}, err
	} else if ok && st.Requests > 0 {
		if left := st.LastRequest.Add(p.PollInterval).Sub(now); left > 0 {
			return plugins.Transition{Phase: plugins.PhaseRunning, Version: st.Requests, Info: polling(st), RequeueAfter: left}, nil
		}
	}
	what := cfg.Method + " " + redact(cfg.url)
	if _, err := p.allow.admit(cfg.url.Hostname(), port(cfg.url)); err != nil {
		return p.end(k, now, plugins.PhasePermanentFailure, st.Requests, "HostNotAllowed", what+": "+err.Error()), nil
	}

	status, env, err := p.sendTracked(ctx, tc, cfg)
	if errors.Is(err, errInterrupted) {
		// Aborted, or the server is stopping: not the step's failure. A
		// later round sends the request again.
		return plugins.Transition{Phase: plugins.PhaseRunning, Version: st.Requests, Info: what + ": interrupted", RequeueAfter: time.Second}, nil
	}
	if st.Requests == 0 {
		st.FirstRequest = now
	}
	st.Requests++
	st.LastRequest = now
	if err != nil {
		phase, reason, cause := failureOf(err)
		return p.end(k, now, phase, st.Requests, reason, what+": "+cause.Error()), nil
	}
	return p.decide(k, now, cfg, st, what, status, env), nil
}

// errInterrupted: the request was cancelled by an abort or a stop.
var errInterrupted = errors.New("interrupted")

// sendTracked sends the request, cancellable by an abort of the action
// while in flight; a cancelled request's error wraps errInterrupted.
func (p *Plugin) sendTracked(ctx context.Context, tc *plugins.TaskContext, cfg *parsed) (int, map[string]any, error) {
	reqCtx, done := p.inflight.Start(ctx, tc)
	defer done()
	status, env, err := p.send(reqCtx, cfg)
	if err != nil && reqCtx.Err() != nil {
		return 0, nil, fmt.Errorf("%w: %w", errInterrupted, err)
	}
	return status, env, err
}

// failureOf classifies a request's error: a refused host is for good;
// a bad response or a failed request may pass on a retry.
func failureOf(err error) (plugins.Phase, string, error) {
	var na *NotAllowedError
	if errors.As(err, &na) {
		return plugins.PhasePermanentFailure, "HostNotAllowed", na
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its message has the URL with its query
	}
	var re responseError
	if errors.As(err, &re) {
		return plugins.PhaseRetryableFailure, "ResponseError", err
	}
	return plugins.PhaseRetryableFailure, "RequestFailed", err
}

// decide applies the success and failure criteria to a response: done,
// failed, or polled again.
func (p *Plugin) decide(k string, now time.Time, cfg *parsed, st State, what string, status int, env map[string]any) plugins.Transition {
	success, failure, err := criteria(cfg, status, env)
	if err != nil {
		return p.end(k, now, plugins.PhaseRetryableFailure, st.Requests, "ExpressionError", fmt.Sprintf("%s: HTTP %d: %v", what, status, err))
	}
	switch {
	case success && !failure:
		outputs, err := buildOutputs(cfg.Outputs, env)
		if err != nil {
			return p.end(k, now, plugins.PhaseRetryableFailure, st.Requests, "OutputError", fmt.Sprintf("%s: HTTP %d: %v", what, status, err))
		}
		tr := plugins.Transition{Phase: plugins.PhaseSuccess, Version: st.Requests, Info: fmt.Sprintf("%s: HTTP %d", what, status), Outputs: outputs}
		p.remember(k, now, tr)
		return tr
	case failure:
		return p.end(k, now, plugins.PhasePermanentFailure, st.Requests, "FailureCriteriaMet",
			fmt.Sprintf("%s: HTTP (%d) response met failure criteria", what, status))
	}
	return plugins.Transition{
		Phase: plugins.PhaseRunning, Version: st.Requests, RequeueAfter: p.PollInterval,
		Info:  fmt.Sprintf("%s: HTTP %d met neither success nor failure criteria; %s", what, status, polling(st)),
		State: st, StateVersion: stateVersion,
	}
}

func polling(st State) string {
	return fmt.Sprintf("polling (%d requests since %s)", st.Requests, st.FirstRequest.UTC().Format(time.RFC3339))
}

// end decides the attempt with a failure.
func (p *Plugin) end(k string, now time.Time, phase plugins.Phase, version uint32, code, msg string) plugins.Transition {
	tr := plugins.Transition{Phase: phase, Version: version, Info: code, Error: &plugins.ExecutionError{Code: code, Message: msg}}
	p.remember(k, now, tr)
	return tr
}

func (p *Plugin) remember(k string, now time.Time, tr plugins.Transition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for dk, d := range p.decided {
		if now.Sub(d.at) > decisionTTL {
			delete(p.decided, dk)
		}
	}
	p.decided[k] = decision{tr: tr, at: now}
}

// port is the URL's port, or its scheme's.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}

// responseError is a response that could not be read or parsed.
type responseError struct{ error }

// send sends the request and returns the response's status and the
// expression environment built from it. When the attempt is traced, the
// request has a client span, and carries its context as traceparent
// (unless the step's config sets that header itself), so the service
// called puts its work in the run's trace. The span holds the URL without
// its credentials, query and fragment (redact): those may be secrets, as
// header values may, which it never holds.
func (p *Plugin) send(ctx context.Context, cfg *parsed) (status int, env map[string]any, err error) {
	ctx, span := tracing.Start(ctx, "http "+cfg.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("http.request.method", cfg.Method), attribute.String("url.full", redact(cfg.url)),
		attribute.String("server.address", cfg.url.Hostname())))
	defer func() {
		if status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		tracing.End(span, err)
	}()
	req, err := nethttp.NewRequestWithContext(ctx, cfg.Method, cfg.url.String(), strings.NewReader(cfg.Body))
	if err != nil {
		return 0, nil, err
	}
	for _, h := range cfg.Headers {
		req.Header.Add(h.Name, h.Value)
	}
	if req.Header.Get("traceparent") == "" {
		tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	res := p.Resolver
	if res == nil {
		res = net.DefaultResolver
	}
	client := p.allow.Client(res, cfg.timeout)
	client.Timeout = cfg.timeout
	transport := client.Transport.(*nethttp.Transport)
	transport.TLSClientConfig = &tls.Config{InsecureSkipVerify: cfg.InsecureSkipTLSVerify} //nolint:gosec // the step's choice, as in Kargo
	defer transport.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := readBody(resp, p.MaxBody)
	if err != nil {
		return 0, nil, err
	}
	env, err = exprEnv(resp, body)
	return resp.StatusCode, env, err
}

func readBody(resp *nethttp.Response, limit int64) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, responseError{fmt.Errorf("response body size %d exceeds limit of %d bytes", resp.ContentLength, limit)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, responseError{fmt.Errorf("reading response body: %w", err)}
	}
	if int64(len(b)) > limit {
		return nil, responseError{fmt.Errorf("response body exceeds maximum size of %d bytes", limit)}
	}
	return b, nil
}

// exprEnv is Kargo's expression environment for a response.
func exprEnv(resp *nethttp.Response, body []byte) (map[string]any, error) {
	r := map[string]any{
		"status":  int64(resp.StatusCode),
		"header":  resp.Header.Get,
		"headers": resp.Header,
		"body":    map[string]any{},
	}
	contentType := strings.TrimSpace(strings.Split(resp.Header.Get("Content-Type"), ";")[0])
	if len(body) > 0 && contentType == "application/json" {
		var parsed any
		if err := json.Unmarshal(body, &parsed); err != nil {
			return nil, responseError{fmt.Errorf("failed to parse response: %w", err)}
		}
		switch parsed.(type) {
		case map[string]any, []any:
			r["body"] = parsed
		default:
			return nil, responseError{fmt.Errorf("response body is JSON, but neither an object nor an array")}
		}
	}
	return map[string]any{"response": r}, nil
}

// criteria evaluates the success and failure criteria as Kargo does.
func criteria(cfg *parsed, status int, env map[string]any) (success, failure bool, err error) {
	s, f := cfg.SuccessExpression, cfg.FailureExpression
	switch {
	case s != "" && f != "":
		if success, err = evalBool("success", s, env); err != nil {
			return false, false, err
		}
		failure, err = evalBool("failure", f, env)
		return success, failure, err
	case s != "":
		success, err = evalBool("success", s, env)
		return success, !success, err
	case f != "":
		failure, err = evalBool("failure", f, env)
		return !failure, failure, err
	}
	// Redirects are followed, so only 2xx succeeds.
	success = status >= 200 && status < 300
	return success, !success, nil
}

func evalBool(what, src string, env map[string]any) (bool, error) {
	v, err := eval(src, env)
	if err != nil {
		return false, fmt.Errorf("evaluating %s expression: %w", what, err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s expression did not evaluate to a boolean", what)
	}
	return b, nil
}

func eval(src string, env map[string]any) (any, error) {
	program, err := expr.Compile(src)
	if err != nil {
		return nil, err
	}
	return expr.Run(program, env)
}

// buildOutputs evaluates the outputs; they must encode as JSON (the
// executor writes them to outputs.json).
func buildOutputs(outs []Output, env map[string]any) (map[string]any, error) {
	m := make(map[string]any, len(outs))
	for _, o := range outs {
		v, err := eval(o.FromExpression, env)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", o.Name, err)
		}
		if _, err := json.Marshal(v); err != nil {
			return nil, fmt.Errorf("output %s is not JSON: %w", o.Name, err)
		}
		m[o.Name] = v
	}
	return m, nil
}

// Abort cancels the attempt's request, if one is under way.
func (p *Plugin) Abort(_ context.Context, tc *plugins.TaskContext) error {
	p.inflight.Abort(tc)
	return nil
}

// Finalize has nothing to release: an ended attempt's decision expires
// by itself.
func (*Plugin) Finalize(context.Context, *plugins.TaskContext) error { return nil }
