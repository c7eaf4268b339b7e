package handlers

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

func TestGuardCrossOrigin(t *testing.T) {
	guard, err := guardCrossOrigin([]string{"https://ui.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	h := guard(ok)
	for _, tc := range []struct {
		name, method, site, origin, authz string
		want                              int
	}{
		{"curl, an SDK", http.MethodPost, "", "", "", http.StatusNoContent},
		{"the dashboard", http.MethodPost, "same-origin", "http://127.0.0.1:8080", "", http.StatusNoContent},
		{"typed by the user", http.MethodPost, "none", "", "", http.StatusNoContent},
		{"an older browser, our origin", http.MethodPost, "", "http://127.0.0.1:8080", "", http.StatusNoContent},
		{"a CORS origin", http.MethodPost, "cross-site", "https://ui.example.com", "", http.StatusNoContent},
		{"same site, another port", http.MethodPost, "same-site", "http://127.0.0.1:9999", "", http.StatusForbidden},
		{"another site", http.MethodPost, "cross-site", "http://evil.test", "", http.StatusForbidden},
		{"a DELETE from another site", http.MethodDelete, "cross-site", "http://evil.test", "", http.StatusForbidden},
		{"a PUT from an older browser", http.MethodPut, "", "http://evil.test", "", http.StatusForbidden},
		{"a sandboxed page", http.MethodPost, "", "null", "", http.StatusForbidden},
		{"a bearer token", http.MethodPost, "cross-site", "http://evil.test", "Bearer t0ken", http.StatusNoContent},
		{"another scheme of Authorization", http.MethodPost, "cross-site", "http://evil.test", "Basic dTpw", http.StatusForbidden},
		{"an empty bearer token", http.MethodPost, "same-site", "http://127.0.0.1:9999", "Bearer ", http.StatusForbidden},
		// Reads: the browser keeps the answer from the page.
		{"a read", http.MethodGet, "cross-site", "http://evil.test", "", http.StatusNoContent},
	} {
		r := httptest.NewRequest(tc.method, "http://127.0.0.1:8080/api/v1/actions", nil)
		for k, v := range map[string]string{"Sec-Fetch-Site": tc.site, "Origin": tc.origin, "Authorization": tc.authz} {
			if v != "" {
				r.Header.Set(k, v)
			}
		}
		w := serve(h, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		} else if tc.want == http.StatusForbidden && w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: refused without a problem document", tc.name)
		}
	}
	if _, err := guardCrossOrigin([]string{"ui.example.com"}); err == nil {
		t.Error("an origin without a scheme is taken")
	}
}

func TestRequireJSON(t *testing.T) {
	for _, tc := range []struct {
		name, method, ct, body string
		chunked                bool
		want                   int
	}{
		{"JSON", http.MethodPost, "application/json", "{}", false, http.StatusNoContent},
		{"YAML", http.MethodPost, "application/yaml", "a: 1", false, http.StatusNoContent},
		{"no body, no type", http.MethodPost, "", "", false, http.StatusNoContent},
		{"a DELETE", http.MethodDelete, "", "", false, http.StatusNoContent},
		{"a chunked empty body", http.MethodPost, "", "", true, http.StatusNoContent},
		{"a body without a type", http.MethodPost, "", "{}", false, http.StatusUnsupportedMediaType},
		{"a chunked body without a type", http.MethodPut, "", "{}", true, http.StatusUnsupportedMediaType},
		{"text", http.MethodPost, "text/plain", `{"reason":"x"}`, false, http.StatusUnsupportedMediaType},
		{"a form", http.MethodPost, "application/x-www-form-urlencoded", "a=b", false, http.StatusUnsupportedMediaType},
		{"a read", http.MethodGet, "text/plain", "x", false, http.StatusNoContent},
	} {
		var body io.Reader = strings.NewReader(tc.body)
		if tc.chunked {
			body = io.MultiReader(strings.NewReader(tc.body)) // no length known
		}
		r := httptest.NewRequest(tc.method, "/api/v1/x", body)
		if tc.chunked {
			r.ContentLength = -1
		}
		if tc.ct != "" {
			r.Header.Set("Content-Type", tc.ct)
		}
		var got []byte
		w := serve(requireJSON(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got, _ = io.ReadAll(r.Body)
			w.WriteHeader(http.StatusNoContent)
		})), r)
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, w.Code, tc.want)
		}
		if w.Code == http.StatusNoContent && tc.method != http.MethodGet && string(got) != tc.body {
			t.Errorf("%s: the handler read %q, want %q", tc.name, got, tc.body)
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
