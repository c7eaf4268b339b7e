package handlers

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The guards assume a hostile page is open in the user's browser. A page
// on a name that resolves to 127.0.0.1 (DNS rebinding) reaches a loopback
// server with its own name in Host; a page of any site can send a
// "simple" cross-origin POST (no preflight, no JSON, the user's cookies).
// So: Host must be one of ours, an unsafe method must come from our own
// origin (or a CORS origin we were told of), and its body must be JSON,
// which a simple request cannot send.

var (
	errHostNotAllowed   = errors.New("host not allowed")
	errCrossOrigin      = errors.New("cross-origin request refused")
	errPathNotCanonical = errors.New(`the path has an empty, "." or ".." segment`)
)

// HostAllowlist is the set of Host names the server answers to.
type HostAllowlist struct {
	any   bool
	names map[string]bool
}

// NewHostAllowlist allows names (host names or IP literals, without port;
// "*" allows any, which gives up the DNS rebinding defence).
func NewHostAllowlist(names []string) HostAllowlist {
	h := HostAllowlist{names: map[string]bool{}}
	for _, n := range names {
		n = strings.ToLower(strings.Trim(strings.TrimSpace(n), "[]"))
		switch n {
		case "":
		case "*":
			h.any = true
		default:
			h.names[n] = true
		}
	}
	return h
}

// Allows reports whether a request's Host header (with or without port)
// names this server.
func (h HostAllowlist) Allows(hostport string) bool {
	if h.any {
		return true
	}
	host := hostport
	if hst, _, err := net.SplitHostPort(hostport); err == nil {
		host = hst
	}
	return h.names[strings.ToLower(strings.Trim(host, "[]"))]
}

// guardHost refuses requests for another Host. Health probes are exempt:
// a kubelet probes by pod IP, and the answers hold nothing.
func guardHost(allowed HostAllowlist) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !allowed.Allows(r.Host) && r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
				writeProblem(w, r, fmt.Errorf("%w: %q is not a name of this server (see --allowed-hosts)", errHostNotAllowed, r.Host))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// unsafe reports whether a method may change something.
func unsafe(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return false
	}
	return true
}

// guardOrigin refuses an unsafe request whose Origin is neither this
// server's own (the origin's host:port is the request's Host) nor one of
// corsOrigins. Requests without Origin (curl, SDKs) pass: browsers always
// send it on cross-origin unsafe requests.
func guardOrigin(corsOrigins []string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin := r.Header.Get("Origin")
			if unsafe(r.Method) && origin != "" && !sameOrigin(origin, r.Host) && !slices.Contains(corsOrigins, origin) {
				writeProblem(w, r, fmt.Errorf("%w: %s requests from %q are not accepted (see --cors-origins)", errCrossOrigin, r.Method, origin))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}

// requireJSON refuses an unsafe request that does not declare a JSON body
// (415), even an empty one: a cross-site "simple" request cannot declare
// application/json, so this alone stops forged POSTs. The only charset is
// UTF-8.
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if unsafe(r.Method) {
			if err := checkMediaType(r.Header.Get("Content-Type")); err != nil {
				writeProblem(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func checkMediaType(ct string) error {
	// YAML, which Stage writes accept, needs a CORS preflight like JSON:
	// no form or simple request of a foreign page can send it.
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && mt != "application/yaml") {
		return fmt.Errorf("%w (got %q)", errUnsupportedMediaType, ct)
	}
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			return fmt.Errorf("%w: only charset=utf-8 (got %q)", errUnsupportedMediaType, ct)
		}
	}
	return nil
}

// wellFormedURLs refuses, with a 400 problem, a path with a ".", ".." or
// empty segment (a trailing slash aside), rather than let the file server
// answer in text/plain or a router resolve it some other way, and a query
// string that does not parse (whose bad pairs would be dropped silently:
// a stream would start afresh instead of resuming). A path that does not
// parse never gets here: Go answers it with a text/plain 400 itself.
func wellFormedURLs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := urlProblem(r); err != nil {
			writeProblem(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// urlProblem is what is wrong with r's URL, if anything. A function of its
// own, so that the middleware's frame, which stays on the stack as long
// as the request is served, does not hold its locals (see withID).
//
//go:noinline
func urlProblem(r *http.Request) error {
	segs := strings.Split(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/"), "/")
	for _, seg := range segs {
		if seg == "." || seg == ".." || (seg == "" && len(segs) > 1) {
			return errPathNotCanonical
		}
	}
	if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
		return badRequest{fmt.Errorf("the query string: %w", err)}
	}
	return nil
}
