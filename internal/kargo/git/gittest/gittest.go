// Package gittest makes Git repositories for tests: bare repositories with
// a first commit, served over HTTP(S) by Debian's git http-backend (the
// real smart HTTP protocol, pushes included), with or without a password.
package gittest

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// Git runs git in dir with a clean environment and fails the test on an
// error; it returns the trimmed output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := Command(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Command is a git command in dir with no user or system config.
func Command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	return cmd
}

// NewBare makes a bare repository <root>/<name>.git whose branch has one
// commit with files (path → content), and returns its path. Pushes over
// HTTP are allowed.
func NewBare(t testing.TB, root, name, branch string, files map[string]string) string {
	t.Helper()
	bare := filepath.Join(root, name+".git")
	Git(t, root, "init", "-q", "--bare", "-b", branch, bare)
	Git(t, bare, "config", "http.receivepack", "true")
	if len(files) > 0 {
		Commit(t, bare, branch, "Initial commit", files)
	}
	return bare
}

// Commit adds a commit to branch of a bare repository (from its tip, or
// as its first), writing files, and returns its ID.
func Commit(t testing.TB, bare, branch, message string, files map[string]string) string {
	t.Helper()
	work := t.TempDir()
	Git(t, work, "init", "-q", "-b", branch)
	Git(t, work, "remote", "add", "origin", bare)
	if Command(work, "fetch", "-q", "origin", branch).Run() == nil {
		Git(t, work, "checkout", "-q", "-B", branch, "FETCH_HEAD")
	}
	for p, content := range files {
		full := filepath.Join(work, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Git(t, work, "add", "-A")
	Git(t, work, "commit", "-q", "-m", message)
	Git(t, work, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	return Git(t, work, "rev-parse", "HEAD")
}

// Show is a file at a ref of a bare repository ("" when it has none).
func Show(t testing.TB, bare, ref, path string) string {
	t.Helper()
	out, err := Command(bare, "show", ref+":"+path).Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// Head is a branch's commit ("" when there is no such branch).
func Head(t testing.TB, bare, branch string) string {
	t.Helper()
	out, err := Command(bare, "rev-parse", "--verify", "-q", "refs/heads/"+branch).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Server serves the bare repositories under root over HTTP with git
// http-backend: <URL>/<name>.git. With a username, every request needs
// it and the password (HTTP basic authentication).
type Server struct {
	*httptest.Server
	// Requests counts the requests served.
	Requests func() int
}

// Serve starts a server of root's repositories (TLS with a self-signed
// certificate when tls).
func Serve(t testing.TB, root, username, password string, tls bool) *Server {
	t.Helper()
	backend := filepath.Join(Git(t, root, "--exec-path"), "git-http-backend")
	h := &cgi.Handler{Path: backend, Root: "/", Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"}}
	var n atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if username != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != username || p != password {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
	s := &Server{Requests: func() int { return int(n.Load()) }}
	if tls {
		s.Server = httptest.NewTLSServer(handler)
	} else {
		s.Server = httptest.NewServer(handler)
	}
	t.Cleanup(s.Close)
	return s
}
