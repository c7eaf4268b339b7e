// Package bench holds the benchmarks that need the server in a process of
// its own, so that its CPU and memory can be read from /proc apart from
// the clients': REST enqueue against direct creates, read latency, SSE
// fan-out against direct Kubernetes watches, and memory per open stream.
// Run them with make bench; figures go into the issue notes.
package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/tools/clientcmd"

	"taskactions/internal/app"
	"taskactions/internal/controlplane"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/logging"
	"taskactions/internal/testenv"
	"taskactions/internal/tracing"
	"taskactions/pkg/client"
	"taskactions/test/bench/collect"
	"taskactions/test/testserver"
)

// serveEnv makes this test binary the server (see TestMain);
// kubeconfigEnv runs it against another one's control plane, and
// executorEnv names the task types its executor runs.
const (
	serveEnv      = "TASKACTIONS_BENCH_SERVE"
	kubeconfigEnv = "TASKACTIONS_BENCH_KUBECONFIG"
	executorEnv   = "TASKACTIONS_BENCH_EXECUTOR"
	tlsEnv        = "TASKACTIONS_BENCH_TLS"       // cert,key
	gitLocalEnv   = "TASKACTIONS_BENCH_GIT_LOCAL" // "true": --promotion-git-local
	// maxStreamsEnv overrides --max-streams, which by default follows the
	// file limit: HTTP/2 streams share connections.
	maxStreamsEnv = "TASKACTIONS_BENCH_MAX_STREAMS"
	// controlPlaneOnlyEnv makes the process a control plane and nothing
	// else, as a cluster is: no second server's informer, run service and
	// controllers working on every change beside the measured one.
	controlPlaneOnlyEnv = "TASKACTIONS_BENCH_CONTROL_PLANE_ONLY"
)

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
	if k := os.Getenv(kubeconfigEnv); k != "" {
		cfg.Kubeconfig = k
		cfg.ExecutorTaskTypes = ""
	}
	if c, k, ok := strings.Cut(os.Getenv(tlsEnv), ","); ok {
		cfg.TLSCert, cfg.TLSKey = c, k
	}
	if n, err := strconv.Atoi(os.Getenv(maxStreamsEnv)); err == nil {
		cfg.MaxStreams = n
	}
	if t, ok := os.LookupEnv(executorEnv); ok {
		cfg.ExecutorTaskTypes = t
	}
	cfg.PromotionGitLocal = os.Getenv(gitLocalEnv) == "true"
	cfg.Tracing, _ = tracing.FromEnv(os.LookupEnv) // as cmd/server (BenchmarkTracingOverhead)
	if path := os.Getenv("TASKACTIONS_CPUPROFILE"); path != "" && cfg.Kubeconfig != "" {
		// The server under measurement only (startSplit), not its control plane.
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	collect.OnSignal()
	if path := os.Getenv("TASKACTIONS_HEAPPROFILE"); path != "" && cfg.Kubeconfig != "" {
		// SIGUSR2: a profile of the live heap (BenchmarkIdleStreams sends it).
		usr2 := make(chan os.Signal, 1)
		signal.Notify(usr2, syscall.SIGUSR2)
		go func() {
			for range usr2 {
				runtime.GC()
				if f, err := os.Create(path); err == nil {
					_ = pprof.WriteHeapProfile(f)
					f.Close()
				}
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if os.Getenv(controlPlaneOnlyEnv) != "" {
		return serveControlPlane(ctx, cfg, log)
	}
	if err := app.Run(ctx, cfg, log); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serveControlPlane runs the embedded control plane alone, answering
// /readyz on cfg.Listen once it is up, until ctx ends.
func serveControlPlane(ctx context.Context, cfg app.Config, log zerolog.Logger) int {
	if path := os.Getenv("CONTROLPLANE_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: cfg.DataDir, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cp.Stop()
	srv := &http.Server{Addr: cfg.Listen, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// server is the server process under measurement.
type server struct {
	proc
	url     string
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
	addr := testserver.FreeAddr(b)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), serveEnv+"="+filepath.Join(dir, "data"), "TASKACTIONS_LISTEN="+addr), env...)
	cmd.Stderr = os.Stderr
	p := start(b, cmd)
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	s := &server{proc: p, url: "http://" + addr, dataDir: filepath.Join(dir, "data")}
	// Readiness only: the measured clients check the certificate.
	probe := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, tlsEnv+"=") }) {
		s.url = "https://" + addr
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := probe.Get(s.url + "/readyz")
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
	kubeconfig := filepath.Join(s.dataDir, "kubeconfig")
	for _, e := range env {
		if k, ok := strings.CutPrefix(e, kubeconfigEnv+"="); ok {
			kubeconfig = k
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS = -1
	if s.kube, err = versioned.NewForConfig(cfg); err != nil {
		b.Fatal(err)
	}
	return s
}

// startSplit starts two processes: a control plane (the embedded etcd and
// API server alone) and the server under measurement against it with
// --kubeconfig, as on a cluster. The server's CPU and memory then count
// only its own work, not the API server's and etcd's.
// env is the server's extra environment (protocol.serverEnv, maxStreamsEnv).
func startSplit(b *testing.B, env ...string) (controlPlane, s *server) {
	b.Helper()
	controlPlane = startServerEnv(b, controlPlaneOnlyEnv+"=1")
	s = startServerEnv(b, append([]string{kubeconfigEnv + "=" + filepath.Join(controlPlane.dataDir, "kubeconfig")}, env...)...)
	return controlPlane, s
}
