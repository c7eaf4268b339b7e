package browser

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"taskactions/internal/app"
	"taskactions/internal/testenv"
	"taskactions/test/testserver"
)

// serveEnv makes this test binary a server (see TestMain): for tests that
// kill it with SIGKILL, which a server in the test's own process cannot
// take.
const serveEnv = "TASKACTIONS_BROWSER_SERVE"

// serve runs a server on dataDir until SIGTERM.
func serve(dataDir, listen string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := app.Run(ctx, testserver.Config(dataDir, listen), testenv.Logger()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serverProcess is a server in a process of its own.
type serverProcess struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
}

// startProcess starts a server process on dataDir and addr; it does not
// wait for it to be ready.
func startProcess(t *testing.T, dataDir, addr string) *serverProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), serveEnv+"="+dataDir, "TASKACTIONS_LISTEN="+addr)
	p := &serverProcess{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	return p
}

func (p *serverProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// waitReady waits until the server at addr is ready.
func waitReady(t *testing.T, p *serverProcess, addr string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("the server exited:\n%s", p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready in time:\n%s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// api calls the server's API with the admin token.
func api(t *testing.T, addr, token, method, path, body string) int {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+addr+"/api/v1"+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
