package http

import (
	"fmt"
	nethttp "net/http"
	"net/url"
	"time"
)

// Client is an HTTP client that calls only the hosts al admits: its
// Transport is a bare *net/http.Transport (no proxy, which would connect
// where the allowlist does not look; the allowlist's dialer; no
// keep-alive), and a redirect is followed at most maxRedirects times, to
// http(s) only, and to an admitted host only. It has no Timeout: each
// caller bounds its requests. The step's requests go through it, and so
// do the analysis runner's web and Prometheus measurements.
func (al *Allowlist) Client(res Resolver, dialTimeout time.Duration) *nethttp.Client {
	return &nethttp.Client{
		Transport: &nethttp.Transport{
			Proxy:                 nil,
			DialContext:           al.dialer(res, dialTimeout),
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			DisableKeepAlives:     true,
		},
		CheckRedirect: al.checkRedirect,
	}
}

func (al *Allowlist) checkRedirect(r *nethttp.Request, via []*nethttp.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
		return fmt.Errorf("redirect to a %s URL", r.URL.Scheme)
	}
	_, err := al.admit(r.URL.Hostname(), port(r.URL))
	return err
}

// Admits reports, before any request, whether u's host is one al admits
// by name (its addresses are checked again when connecting).
func (al *Allowlist) Admits(u *url.URL) error {
	_, err := al.admit(u.Hostname(), port(u))
	return err
}
