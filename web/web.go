// Package web is the dashboard: static files, embedded in the binary and
// served at /. The pages are routed in the browser, so every path that is
// not a file gets index.html.
package web

import (
	"bytes"
	"embed"
	"html"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var files embed.FS

// Options are what the pages learn from the server, written into
// index.html.
type Options struct {
	// TokenFile is where the admin token is (<data-dir>/api-token): the
	// login page names it.
	TokenFile string
	// TraceLinkTemplate is a URL of a trace with {traceId} in it (an http
	// or https URL, as the server's configuration checks): the pages link
	// an action's trace id to it. Empty: no link.
	TraceLinkTemplate string
}

// tokenFileMeta is index.html's placeholder for Options.TokenFile.
const tokenFileMeta = `<meta name="taskactions-token-file" content="">`

// Handler serves the dashboard.
func Handler(o Options) http.Handler {
	root, _ := fs.Sub(files, "static")
	fileServer := http.FileServerFS(root)
	index := indexHTML(root, o)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
		if name == "" || name == "index.html" || !exists(root, name) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(index))
			return
		}
		fileServer.ServeHTTP(w, r)
	})
}

// indexHTML is index.html with the options filled in (escaped: a data dir
// may hold any character).
func indexHTML(root fs.FS, o Options) []byte {
	b, err := fs.ReadFile(root, "index.html")
	if err != nil {
		panic("web: index.html is not embedded: " + err.Error()) // a broken build, not a runtime condition
	}
	meta := `<meta name="taskactions-token-file" content="` + html.EscapeString(o.TokenFile) + `">`
	// The trace link's meta goes beside it (index.html has no placeholder
	// of its own: absent, the pages show the trace id without a link).
	if o.TraceLinkTemplate != "" {
		meta += "\n  " + `<meta name="taskactions-trace-link" content="` + html.EscapeString(o.TraceLinkTemplate) + `">`
	}
	return bytes.Replace(b, []byte(tokenFileMeta), []byte(meta), 1)
}

func exists(root fs.FS, name string) bool {
	st, err := fs.Stat(root, name)
	return err == nil && !st.IsDir()
}
