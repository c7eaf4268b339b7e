// Package bench holds the benchmarks that need the server in a process of
// its own, so that its CPU and memory can be read from /proc apart from
// the clients': REST enqueue against direct creates, read latency, SSE
// fan-out against direct Kubernetes watches, and memory per open stream.
// Run them with make bench; figures go into the issue notes.
package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"taskactions/internal/app"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/logging"
	"taskactions/internal/testenv"
	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// serveEnv makes this test binary the server (see TestMain).
const serveEnv = "TASKACTIONS_BENCH_SERVE"

func TestMain(m *testing.M) {
	if dir := os.Getenv(serveEnv); dir != "" {
		os.Exit(serve(dir, os.Getenv("TASKACTIONS_LISTEN")))
	}
	os.Exit(m.Run())
}

// serve runs the server as cmd/server would, until SIGTERM.
func serve(dataDir, listen string) int {
	log := testenv.Logger()
	logging.RouteKlog(log)
	cfg := app.Defaults()
	cfg.DataDir, cfg.Listen = dataDir, listen
	cfg.ExecutorTaskTypes = "echo,sleep"
	if a := os.Getenv("TASKACTIONS_AUTH"); a != "" {
		cfg.Auth = a
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := app.Run(ctx, cfg, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// server is the server process under measurement.
type server struct {
	url     string
	pid     int
	dataDir string
	kube    versioned.Interface
	token   string // the admin token; empty with --auth=none
}

// client is an HTTP client of the server that sends the admin token.
func (s *server) client(tr *http.Transport) *http.Client {
	if s.token == "" {
		return &http.Client{Transport: tr}
	}
	return &http.Client{Transport: testserver.Authorized(s.token, tr)}
}

func startServer(b *testing.B) *server {
	b.Helper()
	return startServerEnv(b)
}

// startServerEnv starts the server with extra environment (TASKACTIONS_AUTH=none).
func startServerEnv(b *testing.B, env ...string) *server {
	b.Helper()
	dir := b.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), serveEnv+"="+filepath.Join(dir, "data"), "TASKACTIONS_LISTEN="+addr), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	s := &server{url: "http://" + addr, pid: cmd.Process.Pid, dataDir: filepath.Join(dir, "data")}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatal("server not ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if token, err := client.ReadTokenFile(filepath.Join(s.dataDir, app.FileAPIToken)); err == nil && !slices.Contains(env, "TASKACTIONS_AUTH=none") {
		s.token = token
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.dataDir, "kubeconfig"))
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS = -1
	if s.kube, err = versioned.NewForConfig(cfg); err != nil {
		b.Fatal(err)
	}
	return s
}

// cpuSeconds is the CPU time the server process used so far.
func (s *server) cpuSeconds(b *testing.B) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw)[strings.LastIndexByte(string(raw), ')')+2:])
	utime, _ := strconv.ParseFloat(f[11], 64) // field 14
	stime, _ := strconv.ParseFloat(f[12], 64) // field 15
	return (utime + stime) / 100              // clock ticks (USER_HZ = 100)
}

// rssBytes is the server's resident memory.
func (s *server) rssBytes(b *testing.B) float64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			return kb * 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
