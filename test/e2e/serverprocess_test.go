package e2e

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"taskactions/internal/app"
	"taskactions/internal/testenv"
	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// serverListenEnv is the address a server process listens on.
const serverListenEnv = "TASKACTIONS_E2E_SERVER_LISTEN"

// serveFromEnv is the body of a test that is a server process's entry
// (see startServerProcess): when env names a data dir, it serves that dir
// on serverListenEnv's address until SIGTERM, with the test config as
// adjust changes it. Run as an ordinary test, env is unset and it returns.
func serveFromEnv(t *testing.T, env string, adjust func(*app.Config)) {
	dir := os.Getenv(env)
	if dir == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg := testserver.Config(dir, os.Getenv(serverListenEnv))
	adjust(&cfg)
	if err := app.Run(ctx, cfg, testenv.Logger()); err != nil {
		t.Fatal(err)
	}
}

// startServerProcess runs a server in a process of its own: this test
// binary running only the test named entry, which serves dataDir when
// serveEnv names it (listening on serverListenEnv), with extra
// environment. It returns a client of it, a channel closed when it exits,
// and the process, killed with the test.
//
// The port is picked free and then handed to the process, so another
// server may take it in between: then the process fails to listen and is
// started again on another port. A server is taken as ready only once it
// accepts the admin token of dataDir, which no other server would.
func startServerProcess(t *testing.T, entry, serveEnv, dir, dataDir string, env ...string) (*server, <-chan struct{}, *exec.Cmd) {
	t.Helper()
	for try := 1; ; try++ {
		s, exited, cmd, stderr := tryServerProcess(t, entry, serveEnv, dir, dataDir, env)
		if s != nil {
			return s, exited, cmd
		}
		if !bytes.Contains(stderr, []byte("address already in use")) || try == 3 {
			t.Fatalf("the server process exited:\n%s", stderr)
		}
	}
}

// tryServerProcess starts the server process once. It returns the server
// once it is ready, or, if the process exits first, what it wrote to stderr.
func tryServerProcess(t *testing.T, entry, serveEnv, dir, dataDir string, env []string) (*server, <-chan struct{}, *exec.Cmd, []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^"+entry+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), serveEnv+"="+dataDir, serverListenEnv+"="+addr, "TMPDIR="+dir), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-exited:
			return nil, nil, nil, stderr.Bytes()
		case <-time.After(100 * time.Millisecond):
		}
		if s := readyServer(addr, dataDir); s != nil {
			return s, exited, cmd, nil
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server process on %s was not ready in 90 s:\n%s", addr, stderr.String())
		}
	}
}

// readyServer returns a client of the server on addr if it is ready and
// accepts the admin token of dataDir, else nil.
func readyServer(addr, dataDir string) *server {
	token, err := testserver.AdminToken(dataDir)
	if err != nil {
		return nil
	}
	s := &server{url: "http://" + addr, dataDir: dataDir, token: token, http: &http.Client{Transport: testserver.Authorized(token, nil)}}
	if s.api, err = client.NewClientWithResponses(s.url+"/api/v1", client.WithBearerToken(token)); err != nil {
		return nil
	}
	resp, err := http.Get(s.url + "/readyz")
	if err != nil {
		return nil
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	session, err := s.api.GetSessionWithResponse(context.Background())
	if err != nil || session.StatusCode() != http.StatusOK {
		return nil
	}
	return s
}
