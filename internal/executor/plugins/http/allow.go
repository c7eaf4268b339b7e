package http

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Allowlist says which hosts the plugin may call (--promotion-http-allow).
// An entry is
//
//   - "*": any host, any port, whatever it resolves to;
//   - a host name, "api.example.com", or "*.example.com" for its
//     subdomains (not the name itself);
//   - an IP address, "10.1.2.3" or "::1", or a CIDR, "10.0.0.0/8";
//   - any of the last two with a port: "api.example.com:8443",
//     "10.1.2.3:80", "[::1]:8080". Without one, any port.
//
// The empty list allows nothing: the step calls only what the operator
// named (loopback included, where other services of the machine listen).
//
// Names are checked before the request and on every redirect, and the
// addresses they resolve to when connecting (so DNS cannot point an
// allowed name elsewhere): a name entry admits any address but loopback,
// unspecified, link-local (cloud metadata) and multicast ones, unless an
// IP or CIDR entry covers the address too; "localhost" admits loopback
// addresses only.
type Allowlist struct {
	any   bool
	rules []rule
}

type rule struct {
	name     string       // lower case; "" for an IP/CIDR rule
	wildcard bool         // name is a suffix: "*.example.com" matches x.example.com
	prefix   netip.Prefix // the IP/CIDR rule's addresses
	port     string       // "" for any
}

// ParseAllowlist parses the entries of --promotion-http-allow.
func ParseAllowlist(entries []string) (*Allowlist, error) {
	al := &Allowlist{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "*" {
			al.any = true
			continue
		}
		r, err := parseRule(e)
		if err != nil {
			return nil, fmt.Errorf("promotion http allowlist entry %q: %w", e, err)
		}
		al.rules = append(al.rules, r)
	}
	return al, nil
}

func parseRule(e string) (rule, error) {
	if e == "" {
		return rule{}, fmt.Errorf("empty")
	}
	host, port := e, ""
	_, addrErr := netip.ParseAddr(e)
	_, prefixErr := netip.ParsePrefix(e)
	if addrErr != nil && prefixErr != nil {
		if h, p, err := net.SplitHostPort(e); err == nil {
			host, port = h, p
			if n, err := netip.ParseAddrPort("0.0.0.0:" + p); err != nil || n.Port() == 0 {
				return rule{}, fmt.Errorf("bad port %q", p)
			}
		}
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.Contains(host, "/") {
		p, err := netip.ParsePrefix(host)
		if err != nil {
			return rule{}, err
		}
		return rule{prefix: netip.PrefixFrom(p.Addr().Unmap(), unmappedBits(p)).Masked(), port: port}, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return rule{}, fmt.Errorf("zones are not supported")
		}
		a = a.Unmap()
		return rule{prefix: netip.PrefixFrom(a, a.BitLen()), port: port}, nil
	}
	name := normalizeName(host)
	r := rule{name: name, port: port}
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		r.name, r.wildcard = "."+rest, true
		name = rest
	}
	if name == "" || strings.ContainsAny(name, "*/[]@ ") {
		return rule{}, fmt.Errorf("not a host name")
	}
	return r, nil
}

func unmappedBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return max(p.Bits()-96, 0)
	}
	return p.Bits()
}

func normalizeName(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// target is a host the allowlist admits by name (or literal address),
// before resolution.
type target struct {
	any   bool       // "*"
	addr  netip.Addr // the host is an address literal
	names []rule     // the name rules matching a host name
}

// admit checks a host and port (the port as the connection uses it, "" when
// unknown) before resolution.
func (al *Allowlist) admit(host, port string) (target, error) {
	if al.any {
		return target{any: true}, nil
	}
	if len(al.rules) == 0 {
		return target{}, &NotAllowedError{What: "host " + host, none: true}
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return target{}, notAllowed(host, port)
		}
		t := target{addr: a.Unmap()}
		if !al.addrAdmitted(t.addr, port) {
			return target{}, notAllowed(host, port)
		}
		return t, nil
	}
	name := normalizeName(host)
	var t target
	for _, r := range al.rules {
		if r.name == "" || !portMatches(r.port, port) {
			continue
		}
		if (r.wildcard && strings.HasSuffix(name, r.name)) || (!r.wildcard && name == r.name) {
			t.names = append(t.names, r)
		}
	}
	if len(t.names) == 0 {
		return target{}, notAllowed(host, port)
	}
	return t, nil
}

// resolved checks an address a host resolved to.
func (al *Allowlist) resolved(t target, a netip.Addr, port string) bool {
	a = a.Unmap()
	switch {
	case t.any:
		return true
	case t.addr.IsValid():
		return a == t.addr
	case al.addrAdmitted(a, port):
		return true
	}
	for _, r := range t.names {
		if r.name == "localhost" {
			if a.IsLoopback() {
				return true
			}
			continue
		}
		if !a.IsLoopback() && !a.IsUnspecified() && !a.IsLinkLocalUnicast() && !a.IsMulticast() && !a.IsInterfaceLocalMulticast() {
			return true
		}
	}
	return false
}

func (al *Allowlist) addrAdmitted(a netip.Addr, port string) bool {
	for _, r := range al.rules {
		if r.name == "" && r.prefix.Contains(a) && portMatches(r.port, port) {
			return true
		}
	}
	return false
}

func portMatches(want, got string) bool { return want == "" || want == got }

// NotAllowedError is a host, or an address it resolved to, that the
// allowlist refuses.
type NotAllowedError struct {
	What string
	none bool // the allowlist is empty
}

func (e *NotAllowedError) Error() string {
	if e.none {
		return e.What + " is not allowed: the http step may call no host until --promotion-http-allow names some"
	}
	return e.What + " is not allowed (see --promotion-http-allow)"
}

func notAllowed(host, port string) error {
	if port == "" {
		return &NotAllowedError{What: "host " + host}
	}
	return &NotAllowedError{What: "host " + net.JoinHostPort(host, port)}
}

// Resolver looks host names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// dialer connects only where the allowlist admits: it resolves the name
// itself, keeps the admitted addresses and dials those, and checks again
// in the socket's Control what it actually connects to.
func (al *Allowlist) dialer(res Resolver, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		t, err := al.admit(host, port)
		if err != nil {
			return nil, err
		}
		var addrs []netip.Addr
		if t.addr.IsValid() {
			addrs = []netip.Addr{t.addr}
		} else if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			addrs = []netip.Addr{a.Unmap()} // "*" with a literal
		} else {
			if addrs, err = res.LookupNetIP(ctx, "ip", normalizeName(host)); err != nil {
				return nil, err
			}
		}
		var ok []netip.Addr
		for _, a := range addrs {
			if a.Zone() == "" && al.resolved(t, a, port) {
				ok = append(ok, a.Unmap())
			}
		}
		if len(ok) == 0 {
			return nil, &NotAllowedError{What: fmt.Sprintf("host %s (resolved to %v)", net.JoinHostPort(host, port), addrs)}
		}
		d := net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !al.resolved(t, ap.Addr(), port) {
				return &NotAllowedError{What: "address " + address}
			}
			return nil
		}}
		var lastErr error
		for _, a := range ok {
			conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return conn, nil
			}
			lastErr = err
			if ctx.Err() != nil {
				break
			}
		}
		return nil, lastErr
	}
}
