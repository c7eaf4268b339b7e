package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Server is a taskactions server process (bin/taskactions) running against
// the cluster with a kubeconfig, as a pod of the chart would.
type Server struct {
	URL   string
	Token string // the admin token the server wrote into its data dir
	Dir   string
	proc  *process
}

// StartServer starts bin with the kubeconfig and args on a free port and
// returns once /readyz answers 200. ready bounds the wait.
func StartServer(ctx context.Context, bin, dir, kubeconfig string, ready time.Duration, args ...string) (*Server, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + loopback(ports[0]), Dir: dir}
	all := append([]string{"--listen=" + loopback(ports[0]), "--data-dir=" + filepath.Join(dir, "data"),
		"--kubeconfig=" + kubeconfig, "--log-format=json", "--shutdown-grace-period=2s"}, args...)
	if s.proc, err = startProcess(dir, "taskactions", bin, all); err != nil {
		return nil, err
	}
	if err := s.proc.waitHTTP(ctx, s.URL+"/readyz", nil, "", ready); err != nil {
		s.proc.kill()
		return nil, err
	}
	token, err := os.ReadFile(filepath.Join(dir, "data", "api-token"))
	if err != nil {
		s.proc.kill()
		return nil, err
	}
	s.Token = strings.TrimSpace(string(token))
	return s, nil
}

// Stop stops the server (SIGTERM).
func (s *Server) Stop() error { return s.proc.stop(20 * time.Second) }

// Kill ends the server with SIGKILL.
func (s *Server) Kill() { s.proc.kill() }

// Signal sends the server process a signal (SIGSTOP pauses it).
func (s *Server) Signal(sig os.Signal) error { return s.proc.cmd.Process.Signal(sig) }

// Log is the server's output so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.proc.log)
	return string(b)
}

// Do sends a request with the admin token and a JSON body (nil: none) and
// returns the status and the body.
func (s *Server) Do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	return s.DoAs(ctx, s.Token, method, path, body)
}

// DoAs is Do with another bearer token.
func (s *Server) DoAs(ctx context.Context, token, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if method != http.MethodGet {
		// Even without a body: the server refuses an unsafe request that
		// does not declare JSON (a cross-site form cannot).
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// DoJSON is Do that wants one of the statuses and decodes the body into out
// (nil: ignored).
func (s *Server) DoJSON(ctx context.Context, method, path string, body, out any, want ...int) error {
	status, b, err := s.Do(ctx, method, path, body)
	if err != nil {
		return err
	}
	for _, w := range want {
		if status == w {
			if out == nil {
				return nil
			}
			return json.Unmarshal(b, out)
		}
	}
	return fmt.Errorf("%s %s: %d %s", method, path, status, bytes.TrimSpace(b))
}
