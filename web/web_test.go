package web

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, method, target string) (*http.Response, string) {
	t.Helper()
	w := httptest.NewRecorder()
	Handler(Options{TokenFile: "/var/lib/taskactions/api-token"}).ServeHTTP(w, httptest.NewRequest(method, target, nil))
	resp := w.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// The pages are routed in the browser: every path that is not a file gets
// index.html, which loads the app.
func TestClientRoutesServeIndex(t *testing.T) {
	for _, p := range []string{"/", "/projects/p/domains/d", "/projects/p/domains/d/runs/r", "/projects/p/domains/d/runs/r/", "/no/such/page"} {
		resp, body := get(t, http.MethodGet, p)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %s, want 200 text/html", p, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if !strings.Contains(body, `<script type="module" src="/js/app.js">`) {
			t.Errorf("GET %s: not the dashboard's index.html", p)
		}
	}
	if resp, _ := get(t, http.MethodPost, "/"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", resp.StatusCode)
	}
}

// Browsers run module scripts only when served as JavaScript.
func TestAssetTypes(t *testing.T) {
	for p, want := range map[string]string{
		"/js/app.js": "text/javascript", "/js/run.js": "text/javascript",
		"/app.css": "text/css", "/favicon.svg": "image/svg+xml",
	} {
		resp, _ := get(t, http.MethodGet, p)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), want) {
			t.Errorf("GET %s: %d %s, want 200 %s", p, resp.StatusCode, resp.Header.Get("Content-Type"), want)
		}
	}
}

var (
	// References from index.html (src, href) and between modules (import ... from).
	htmlRef   = regexp.MustCompile(`(?:src|href)="(/[^"]*)"`)
	importRef = regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'`)
	// Anything on another host: the dashboard fetches nothing from outside.
	outside = regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9-]+(?:\.[a-z0-9-]+)+[/:"')]`)
	xmlns   = regexp.MustCompile(`xmlns(?::\w+)?="[^"]*"`)
)

// Every file the page refers to is there, and none is elsewhere.
func TestReferencesResolveLocally(t *testing.T) {
	root, err := fs.Sub(files, "static")
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, name)
		if err != nil {
			return err
		}
		text := string(b)
		// An XML namespace names, it does not fetch.
		if m := outside.FindString(xmlns.ReplaceAllString(text, "")); m != "" {
			t.Errorf("%s refers to another host: %q", name, m)
		}
		var refs []string
		switch path.Ext(name) {
		case ".html":
			for _, m := range htmlRef.FindAllStringSubmatch(text, -1) {
				refs = append(refs, strings.TrimPrefix(m[1], "/"))
			}
		case ".js":
			for _, m := range importRef.FindAllStringSubmatch(text, -1) {
				if !strings.HasPrefix(m[1], "./") {
					t.Errorf("%s imports %q: only relative modules of the dashboard", name, m[1])
					continue
				}
				refs = append(refs, path.Join(path.Dir(name), m[1]))
			}
		}
		for _, ref := range refs {
			if ref == "" || ref == "api/v1/openapi.yaml" {
				continue // the home page, and the API's own document
			}
			if _, err := fs.Stat(root, ref); err != nil {
				t.Errorf("%s refers to %s, which is not in web/static", name, ref)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The login page names the token file of this server's data dir, which
// index.html carries (escaped).
func TestIndexNamesTokenFile(t *testing.T) {
	w := httptest.NewRecorder()
	Handler(Options{TokenFile: `/srv/a"b<c>/api-token`}).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/projects/p/stages", nil))
	body := w.Body.String()
	if want := `<meta name="taskactions-token-file" content="/srv/a&#34;b&lt;c&gt;/api-token">`; !strings.Contains(body, want) {
		t.Errorf("index.html does not carry %s", want)
	}
}

// The trace link template (--trace-link-template) reaches the pages as a
// meta of its own, escaped; without one there is none.
func TestIndexCarriesTraceLink(t *testing.T) {
	get := func(o Options) string {
		w := httptest.NewRecorder()
		Handler(o).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		return w.Body.String()
	}
	body := get(Options{TokenFile: "/t", TraceLinkTemplate: `https://jaeger.example/trace/{traceId}?a=1&b="2"`})
	if want := `<meta name="taskactions-trace-link" content="https://jaeger.example/trace/{traceId}?a=1&amp;b=&#34;2&#34;">`; !strings.Contains(body, want) {
		t.Errorf("index.html does not carry %s", want)
	}
	if !strings.Contains(body, `<meta name="taskactions-token-file" content="/t">`) {
		t.Error("the token file's meta is gone")
	}
	if strings.Contains(get(Options{TokenFile: "/t"}), "taskactions-trace-link") {
		t.Error("a trace link meta without a template")
	}
}
