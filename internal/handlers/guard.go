package handlers

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"taskactions/internal/auth"
)

// The guards assume a hostile page is open in the user's browser. A page
// on a name that resolves to 127.0.0.1 (DNS rebinding) reaches a loopback
// server with its own name in Host; a page of any site can send a
// "simple" cross-origin POST (no preflight, no body or a form's, the
// user's cookies). So: Host must be one of ours, and an unsafe method
// without a bearer token must come from our own origin (or a CORS origin
// we were told of).

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

// guardCrossOrigin refuses a browser's cross-origin request that may
// change something: the standard library's CrossOriginProtection, which
// reads Sec-Fetch-Site (every current browser sends it) and else Origin,
// and trusts corsOrigins. A page of another origin (another port of the
// same host included, which SameSite does not tell apart) can make the
// browser send a "simple" POST with its cookies and no body, or a form;
// this is what stops it. A request with a bearer token is let through: a
// page cannot make a browser send an Authorization header to another
// origin without a CORS preflight, which only corsOrigins pass, and such a
// request is authenticated by its token alone, never by a cookie.
// Requests of neither kind (curl, SDKs) carry neither header and pass.
func guardCrossOrigin(corsOrigins []string) (func(http.Handler) http.Handler, error) {
	cop := http.NewCrossOriginProtection()
	for _, o := range corsOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("--cors-origins: %w", err)
		}
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := crossOriginProblem(cop, r); err != nil {
				writeProblem(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// crossOriginProblem is why r is refused as a cross-origin request, if it
// is (a function of its own for the frame's sake; see withID).
//
//go:noinline
func crossOriginProblem(cop *http.CrossOriginProtection, r *http.Request) error {
	if auth.HasBearerToken(r) {
		return nil
	}
	if err := cop.Check(r); err != nil {
		from := r.Header.Get("Origin")
		if from == "" {
			from = "another origin"
		}
		return fmt.Errorf("%w: %s from %s (Sec-Fetch-Site %q) carries no bearer token; pages of other origins may not send it (see --cors-origins): %w",
			errCrossOrigin, r.Method, from, r.Header.Get("Sec-Fetch-Site"), err)
	}
	return nil
}

// requireJSON refuses (415) a request body that is not declared JSON or
// YAML, whatever the route: what a route takes exactly is the validator's
// to say, which refuses YAML where only JSON is. A request without a body
// needs no Content-Type (no client sends one for an operation without a
// body). The only charset is UTF-8.
func requireJSON(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if unsafe(r.Method) && hasBody(r) {
			if err := checkMediaType(r.Header.Get("Content-Type")); err != nil {
				writeProblem(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hasBody reports whether r has a body of at least one byte. One of
// unknown length (chunked; HTTP/2 without a Content-Length) is peeked at,
// and the byte put back.
func hasBody(r *http.Request) bool {
	switch {
	case r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0:
		return false
	case r.ContentLength > 0:
		return true
	}
	var b [1]byte
	n, _ := io.ReadFull(r.Body, b[:])
	r.Body = readCloser{io.MultiReader(bytes.NewReader(b[:n]), r.Body), r.Body}
	return n > 0
}

type readCloser struct {
	io.Reader
	io.Closer
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
