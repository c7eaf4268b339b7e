package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"taskactions/test/testserver"
	"testing"
	"time"
)

// The tests start this test binary as the server: with runAsServer set,
// TestMain runs main's code instead of the tests, in a real process.
const runAsServer = "TASKACTIONS_TEST_RUN_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(runAsServer) != "" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

type proc struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{} // closed when it exited, with err set
	err    error
}

// lockedBuffer is the server's stderr, read while the process writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (p *proc) log() string { return p.stderr.String() }

func startServer(t *testing.T, args ...string) *proc {
	t.Helper()
	return startCommand(t, exec.Command(os.Args[0], args...))
}

// startCommand runs cmd, which execs this test binary as the server
// (directly, or through prlimit).
func startCommand(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	cmd.Env = append(append(os.Environ(), cmd.Env...), runAsServer+"=1", "TASKACTIONS_LOG_FORMAT=json")
	p := &proc{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

// readyz returns the status code of /readyz, or 0 when nothing answers.
func readyz(addr string) int {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A server is alive and says it is not ready while its control plane
// starts, then ready; a second one on the same data dir exits non-zero,
// naming the dir and the holder, and leaves the first serving; SIGTERM
// stops the first cleanly, also while a client holds a request open past
// the grace period.
func TestServerProcessLifecycle(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := testserver.FreeAddr(t)
	first := startServer(t, "--listen", addr, "--data-dir", dataDir, "--shutdown-grace-period", "1s")

	var seen []int
	deadline := time.Now().Add(2 * time.Minute)
	for len(seen) == 0 || seen[len(seen)-1] != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("not ready in time; /readyz answers %v; log:\n%s", seen, first.stderr)
		}
		if code := readyz(addr); code != 0 && (len(seen) == 0 || seen[len(seen)-1] != code) {
			seen = append(seen, code)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if seen[0] != http.StatusServiceUnavailable {
		t.Errorf("/readyz answered %v while starting, want 503 before 200", seen)
	}

	second := startServer(t, "--listen", testserver.FreeAddr(t), "--data-dir", dataDir)
	select {
	case <-second.done:
		var exit *exec.ExitError
		if !errors.As(second.err, &exit) || exit.ExitCode() == 0 {
			t.Fatalf("second server on the same data dir: %v, want a non-zero exit", second.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("second server on the same data dir did not exit")
	}
	msg := second.stderr.String()
	if !strings.Contains(msg, dataDir) || !strings.Contains(msg, fmt.Sprintf("pid %d", first.cmd.Process.Pid)) {
		t.Errorf("the refusal should name %s and pid %d:\n%s", dataDir, first.cmd.Process.Pid, msg)
	}
	if code := readyz(addr); code != http.StatusOK {
		t.Fatalf("first server after the refused second: /readyz %d", code)
	}

	slow := holdRequest(t, addr, dataDir)
	defer slow.Close()
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.done:
		if first.err != nil {
			t.Fatalf("exit after SIGTERM: %v; log:\n%s", first.err, first.stderr)
		}
	case <-time.After(time.Minute):
		t.Fatal("no exit after SIGTERM")
	}
	log := first.stderr.String()
	if !strings.Contains(log, `"message":"stopped"`) || !strings.Contains(log, "cut off") {
		t.Errorf("no clean stop, or no word of the request cut off, in the log:\n%s", log)
	}
	if strings.Contains(log, "event streams still open") {
		t.Errorf("a warning of open streams, with none open:\n%s", log)
	}
}

// holdRequest starts an enqueue whose body never finishes arriving.
func holdRequest(t *testing.T, addr, dataDir string) net.Conn {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(dataDir, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /api/v1/actions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"action\":",
		addr, strings.TrimSpace(string(token)))
	time.Sleep(200 * time.Millisecond) // the server reads the headers and waits for the body
	return conn
}

// SIGTERM while the server starts is a stop like any other: exit 0, the
// data dir left to the next start.
func TestStopWhileStarting(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	p := startServer(t, "--listen", testserver.FreeAddr(t), "--data-dir", dataDir)
	for deadline := time.Now().Add(time.Minute); !strings.Contains(p.log(), "authentication on"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no start in the log:\n%s", p.log())
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("exit after SIGTERM while starting: %v; log:\n%s", p.err, p.log())
		}
	case <-time.After(time.Minute):
		t.Fatal("no exit after SIGTERM while starting")
	}
	if !strings.Contains(p.log(), "stopped while starting") {
		t.Logf("the stop came after the start was done; the test checked less than it means to:\n%s", p.log())
	}
	again := startServer(t, "--listen", testserver.FreeAddr(t), "--data-dir", dataDir)
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(again.log(), `"message":"ready"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the next start was not ready:\n%s", again.log())
		}
	}
}
