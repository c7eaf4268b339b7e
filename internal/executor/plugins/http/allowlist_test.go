package http

import (
	"context"
	"fmt"
	nethttp "net/http"
	"net/netip"
	"strings"
	"testing"

	"taskactions/internal/executor/plugins"
)

// By default nothing is called, loopback included; an allowlist that
// names loopback calls it, and one without it refuses a loopback server
// before any connection.
func TestAllowlist(t *testing.T) {
	s := newServer(t, func(nethttp.ResponseWriter, *nethttp.Request) {})
	_, port, _ := strings.Cut(hostPort(s.Server), ":")
	for _, tc := range []struct {
		allow []string
		url   string
		ok    bool
	}{
		{nil, s.URL, false},
		{nil, "http://localhost:" + port, false},
		{nil, "http://[::1]:" + port, false},
		{loopback, s.URL, true},
		{loopback, "http://localhost:" + port, true},
		{loopback, "http://LOCALHOST.:" + port, true},
		{[]string{"example.invalid"}, s.URL, false},
		{[]string{"example.invalid"}, "http://localhost:" + port, false},
		{[]string{"127.0.0.1:" + port}, s.URL, true},
		{[]string{"127.0.0.1:1"}, s.URL, false},
		{[]string{"127.0.0.0/8"}, s.URL, true},
		{[]string{"10.0.0.0/8", "::1"}, s.URL, false},
		{[]string{"localhost:" + port}, "http://localhost:" + port, true},
		{[]string{"*"}, s.URL, true},
	} {
		hits := s.hits.Load()
		tr := handle(t, newPlugin(t, tc.allow...), map[string]any{"url": tc.url})
		if tc.ok {
			wantPhase(t, tr, plugins.PhaseSuccess, "")
		} else {
			wantPhase(t, tr, plugins.PhasePermanentFailure, "HostNotAllowed")
			if s.hits.Load() != hits {
				t.Errorf("%v %s: refused, but the server was called", tc.allow, tc.url)
			}
		}
	}
}

// Redirects are checked too: to a host the allowlist does not name, or
// to a port it does not.
func TestRedirectToHostNotAllowed(t *testing.T) {
	other := newServer(t, func(nethttp.ResponseWriter, *nethttp.Request) {})
	redirectTo := func(target string) *server {
		return newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
			nethttp.Redirect(w, r, target, nethttp.StatusFound)
		})
	}
	toInvalid := redirectTo("http://example.invalid/x")
	tr := handle(t, newPlugin(t, loopback...), map[string]any{"url": toInvalid.URL})
	wantPhase(t, tr, plugins.PhasePermanentFailure, "HostNotAllowed")

	toOther := redirectTo(other.URL + "/y?token=abc")
	tr = handle(t, newPlugin(t, hostPort(toOther.Server)), map[string]any{"url": toOther.URL})
	wantPhase(t, tr, plugins.PhasePermanentFailure, "HostNotAllowed")
	if other.hits.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
	if strings.Contains(tr.Error.Message, "token") {
		t.Errorf("message has the query: %s", tr.Error.Message)
	}
	// Both allowed: followed.
	tr = handle(t, newPlugin(t, loopback...), map[string]any{"url": toOther.URL})
	wantPhase(t, tr, plugins.PhaseSuccess, "")
	if other.hits.Load() != 1 {
		t.Fatal("the redirect was not followed")
	}
}

// resolver resolves names from a map.
type resolver map[string][]netip.Addr

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// What a name resolves to is checked: an allowed name pointing at
// loopback (DNS rebinding) is refused unless loopback is allowed too.
func TestResolvedAddressesAreChecked(t *testing.T) {
	s := newServer(t, func(nethttp.ResponseWriter, *nethttp.Request) {})
	_, port, _ := strings.Cut(hostPort(s.Server), ":")
	res := resolver{"rebind.test": {netip.MustParseAddr("127.0.0.1")}, "meta.test": {netip.MustParseAddr("169.254.169.254")},
		"localhost": {netip.MustParseAddr("192.0.2.1")}}
	for _, tc := range []struct {
		allow []string
		host  string
		code  string
	}{
		{[]string{"rebind.test"}, "rebind.test", "HostNotAllowed"},
		{[]string{"*.test"}, "rebind.test", "HostNotAllowed"},
		{[]string{"rebind.test", "127.0.0.1"}, "rebind.test", ""},
		{[]string{"meta.test"}, "meta.test", "HostNotAllowed"},
		{nil, "localhost", "HostNotAllowed"},
		{[]string{"localhost"}, "localhost", "HostNotAllowed"}, // localhost must be loopback
		{[]string{"*"}, "rebind.test", ""},
	} {
		p := newPlugin(t, tc.allow...)
		p.Resolver = res
		hits := s.hits.Load()
		tr := handle(t, p, map[string]any{"url": "http://" + tc.host + ":" + port})
		if tc.code == "" {
			wantPhase(t, tr, plugins.PhaseSuccess, "")
		} else {
			wantPhase(t, tr, plugins.PhasePermanentFailure, tc.code)
			if s.hits.Load() != hits {
				t.Errorf("%v %s: refused, but the server was called", tc.allow, tc.host)
			}
		}
	}
}
