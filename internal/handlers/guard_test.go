package handlers

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCheckMediaType(t *testing.T) {
	for _, tc := range []struct {
		ct string
		ok bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"application/json; charset=UTF-8", true},
		{"Application/JSON", true},
		{"application/json; charset=utf-16", false},
		{"application/json; charset=iso-8859-1", false},
		{"application/json; boundary=x", false},
		{"application/merge-patch+json", false},
		{"text/plain", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=x", false},
		{"", false},
		{"not a media type;;", false},
	} {
		err := checkMediaType(tc.ct)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, errUnsupportedMediaType)) {
			t.Errorf("checkMediaType(%q) = %v, want ok %v", tc.ct, err, tc.ok)
		}
	}
}

func TestHostAllowlist(t *testing.T) {
	h := NewHostAllowlist([]string{"localhost", "127.0.0.1", "[::1]", "Tasks.Example.com", ""})
	for host, want := range map[string]bool{
		"localhost:8080":        true,
		"127.0.0.1":             true,
		"127.0.0.1:8080":        true,
		"[::1]:8080":            true,
		"tasks.example.com:443": true,
		"TASKS.example.com":     true,
		"evil.test:8080":        false,
		"localhost.evil.test":   false,
		"127.0.0.1.nip.io:8080": false,
		"":                      false,
		"[::2]:8080":            false,
	} {
		if got := h.Allows(host); got != want {
			t.Errorf("Allows(%q) = %v, want %v", host, got, want)
		}
	}
	if !NewHostAllowlist([]string{"*"}).Allows("anything.test:1") {
		t.Error(`"*" does not allow any host`)
	}
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

func TestGuardHost(t *testing.T) {
	h := guardHost(NewHostAllowlist([]string{"127.0.0.1"}))(ok)
	for _, tc := range []struct {
		host, path string
		want       int
	}{
		{"127.0.0.1:8080", "/api/v1/actions", http.StatusNoContent},
		{"evil.test:8080", "/api/v1/actions", http.StatusForbidden},
		{"evil.test:8080", "/", http.StatusForbidden},
		// Probes come by pod IP and learn nothing.
		{"10.1.2.3:8080", "/healthz", http.StatusNoContent},
		{"10.1.2.3:8080", "/readyz", http.StatusNoContent},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://"+tc.host+tc.path, nil)
		if w := serve(h, r); w.Code != tc.want {
			t.Errorf("Host %s %s: %d, want %d", tc.host, tc.path, w.Code, tc.want)
		} else if tc.want == http.StatusForbidden && w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("Host %s: refused without a problem document", tc.host)
		}
	}
}

func TestGuardOrigin(t *testing.T) {
	h := guardOrigin([]string{"https://ui.example.com"})(ok)
	for _, tc := range []struct {
		method, origin string
		want           int
	}{
		{http.MethodPost, "", http.StatusNoContent}, // curl, SDKs
		{http.MethodPost, "http://127.0.0.1:8080", http.StatusNoContent},
		{http.MethodPost, "https://127.0.0.1:8080", http.StatusNoContent},
		{http.MethodPost, "https://ui.example.com", http.StatusNoContent},
		{http.MethodPost, "http://127.0.0.1:9999", http.StatusForbidden}, // same site, other port
		{http.MethodPost, "http://evil.test:8080", http.StatusForbidden},
		{http.MethodPost, "null", http.StatusForbidden},
		{http.MethodPut, "http://evil.test", http.StatusForbidden},
		{http.MethodDelete, "http://evil.test", http.StatusForbidden},
		{http.MethodGet, "http://evil.test", http.StatusNoContent}, // reads: the browser keeps the answer from the page
	} {
		r := httptest.NewRequest(tc.method, "http://127.0.0.1:8080/api/v1/actions", nil)
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if w := serve(h, r); w.Code != tc.want {
			t.Errorf("%s from %q: %d, want %d", tc.method, tc.origin, w.Code, tc.want)
		}
	}
}

func TestRequireJSON(t *testing.T) {
	h := requireJSON(ok)
	for _, tc := range []struct {
		method, ct string
		want       int
	}{
		{http.MethodPost, "application/json", http.StatusNoContent},
		{http.MethodPost, "", http.StatusUnsupportedMediaType}, // a simple request: no body, no type
		{http.MethodPost, "text/plain", http.StatusUnsupportedMediaType},
		{http.MethodDelete, "", http.StatusUnsupportedMediaType},
		{http.MethodGet, "", http.StatusNoContent},
	} {
		r := httptest.NewRequest(tc.method, "/api/v1/x", nil)
		if tc.ct != "" {
			r.Header.Set("Content-Type", tc.ct)
		}
		if w := serve(h, r); w.Code != tc.want {
			t.Errorf("%s with %q: %d, want %d", tc.method, tc.ct, w.Code, tc.want)
		}
	}
}

func TestWellFormedURLs(t *testing.T) {
	h := wellFormedURLs(ok)
	for path, want := range map[string]int{
		"/":                                 http.StatusNoContent,
		"/projects/p/domains/d":             http.StatusNoContent,
		"/projects/p/domains/d/runs/r/":     http.StatusNoContent,
		"/api/v1/actions":                   http.StatusNoContent,
		"/api/v1/../healthz":                http.StatusBadRequest,
		"/js/../../etc/passwd":              http.StatusBadRequest,
		"/./index.html":                     http.StatusBadRequest,
		"/api//v1/actions":                  http.StatusBadRequest,
		"/api/v1/projects/%2e%2e/domains/d": http.StatusBadRequest,
	} {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
		if w := serve(h, r); w.Code != want {
			t.Errorf("%s: %d, want %d", path, w.Code, want)
		} else if want == http.StatusBadRequest && w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: refused without a problem document", path)
		}
	}
}
