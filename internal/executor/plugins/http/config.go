package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr"
)

// Config is the step's configuration, template.custom: Kargo's http step
// config (its http-config.json schema), field for field.
type Config struct {
	// Method is DELETE, GET (the default), HEAD, PATCH, POST or PUT.
	Method string `json:"method,omitempty"`
	// URL is where the request goes (http or https).
	URL string `json:"url"`
	// Headers are added to the request.
	Headers []NameValue `json:"headers,omitempty"`
	// QueryParams are added to the URL's query.
	QueryParams []NameValue `json:"queryParams,omitempty"`
	// Body is the request body.
	Body string `json:"body,omitempty"`
	// InsecureSkipTLSVerify skips the server certificate's verification.
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	// Timeout bounds the request, redirects and the body's read included
	// (a Go duration; 10s by default).
	Timeout string `json:"timeout,omitempty"`
	// SuccessExpression and FailureExpression are expr-lang expressions
	// over response; see Plugin.
	SuccessExpression string `json:"successExpression,omitempty"`
	FailureExpression string `json:"failureExpression,omitempty"`
	// Outputs are evaluated over response on success.
	Outputs []Output `json:"outputs,omitempty"`
}

// NameValue is a header or a query parameter.
type NameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Output is one output: its name and the expression giving its value.
type Output struct {
	Name           string `json:"name"`
	FromExpression string `json:"fromExpression"`
}

// DefaultTimeout is Kargo's.
const DefaultTimeout = 10 * time.Second

var methods = []string{"DELETE", "GET", "HEAD", "PATCH", "POST", "PUT"}

// parsed is a valid config, ready to run.
type parsed struct {
	Config
	url     *url.URL // with the query params
	timeout time.Duration
}

// parseConfig checks custom as Kargo's schema does (no unknown fields,
// required fields set, strings where strings go), and a little more:
// the URL is http(s) with a host, the timeout positive and the
// expressions compile.
func parseConfig(custom map[string]any) (*parsed, error) {
	if err := checkKeys(custom, "", "method", "url", "headers", "queryParams", "body", "insecureSkipTLSVerify",
		"timeout", "successExpression", "failureExpression", "outputs"); err != nil {
		return nil, err
	}
	for field, keys := range map[string][]string{"headers": {"name", "value"}, "queryParams": {"name", "value"}, "outputs": {"name", "fromExpression"}} {
		items, _ := custom[field].([]any)
		for i, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s[%d] is not an object", field, i)
			}
			if err := checkKeys(m, fmt.Sprintf("%s[%d].", field, i), keys...); err != nil {
				return nil, err
			}
		}
	}
	b, err := json.Marshal(custom)
	if err != nil {
		return nil, err
	}
	var p parsed
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p.Config); err != nil {
		return nil, fmt.Errorf("http step config: %w", err)
	}
	c := &p.Config
	if c.Method == "" {
		c.Method = "GET"
	} else if !slices.Contains(methods, c.Method) {
		return nil, fmt.Errorf("method %q: want one of %s", c.Method, strings.Join(methods, ", "))
	}
	if c.URL == "" {
		return nil, fmt.Errorf("url is required")
	}
	if p.url, err = url.Parse(c.URL); err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if (p.url.Scheme != "http" && p.url.Scheme != "https") || p.url.Host == "" {
		return nil, fmt.Errorf("url %s: want http(s)://host/...", redact(p.url))
	}
	for i, h := range c.Headers {
		if h.Name == "" || h.Value == "" {
			return nil, fmt.Errorf("headers[%d]: name and value are required", i)
		}
	}
	if len(c.QueryParams) > 0 {
		q := p.url.Query()
		for i, qp := range c.QueryParams {
			if qp.Name == "" || qp.Value == "" {
				return nil, fmt.Errorf("queryParams[%d]: name and value are required", i)
			}
			q.Add(qp.Name, qp.Value)
		}
		p.url.RawQuery = q.Encode()
	}
	p.timeout = DefaultTimeout
	if c.Timeout != "" {
		if p.timeout, err = time.ParseDuration(c.Timeout); err != nil || p.timeout <= 0 {
			return nil, fmt.Errorf("timeout %q is not a positive duration", c.Timeout)
		}
	}
	for _, e := range []struct{ name, src string }{{"successExpression", c.SuccessExpression}, {"failureExpression", c.FailureExpression}} {
		if e.src != "" {
			if _, err := expr.Compile(e.src); err != nil {
				return nil, fmt.Errorf("%s: %w", e.name, err)
			}
		}
	}
	for i, o := range c.Outputs {
		if o.Name == "" || o.FromExpression == "" {
			return nil, fmt.Errorf("outputs[%d]: name and fromExpression are required", i)
		}
		if _, err := expr.Compile(o.FromExpression); err != nil {
			return nil, fmt.Errorf("outputs[%d] (%s): %w", i, o.Name, err)
		}
	}
	return &p, nil
}

// checkKeys refuses keys not in allowed, exactly as spelled (the JSON
// decoder would take "URL" for "url").
func checkKeys(m map[string]any, prefix string, allowed ...string) error {
	for k := range m {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("unknown field %s%s (want %s)", prefix, k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// redact is a URL fit for messages: no user info, no query (query params
// and credentials may be secrets).
func redact(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}
