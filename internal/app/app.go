package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"taskactions/internal/analysis/resources"
	"taskactions/internal/controlplane"
	"taskactions/internal/executor"
	"taskactions/internal/failpoint"
	"taskactions/internal/handlers"
	"taskactions/internal/history"
	"taskactions/internal/kargo/credentials"
	"taskactions/internal/kargo/freight"
	"taskactions/internal/kargo/projectconfigs"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/kargo/stages"
	"taskactions/internal/kargo/warehouses"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/lifecycle"
	"taskactions/internal/logs"
	"taskactions/internal/pipeline"
	"taskactions/internal/runs"
	"taskactions/internal/sse"
	"taskactions/internal/taskactions"
	"taskactions/internal/taskactions/notifier"
	"taskactions/web"
)

// App is a running server.
type App struct {
	cfg Config
	log zerolog.Logger

	ln        net.Listener
	conns     *connLimiter // ln's bound on connections
	srv       *http.Server
	handler   atomic.Pointer[http.Handler]
	apiReady  chan struct{} // closed when handler serves the API
	tlsConfig *tls.Config
	// streamsStop ends every event stream when the server shuts down.
	streamsStop context.Context
	stopStreams context.CancelFunc
	// detached counts the streams that left net/http (sse.detach), which
	// http.Server's shutdown does not wait for.
	detached sync.WaitGroup
	serveErr chan error

	// parts is everything that runs (parts.go); the fields below are what
	// its parts made, for the parts after them and for the API.
	parts      *lifecycle.Group
	cp         *controlplane.ControlPlane
	restCfg    *rest.Config
	kube       kubernetes.Interface // an external cluster's core API; nil on the embedded one
	client     versioned.Interface
	exec       executorSetup
	mgr        *taskactions.Manager
	notifier   *notifier.Notifier
	stages     *stages.Manager
	freight    *freight.Manager
	promos     *promotions.Manager
	warehouses *warehouses.Manager
	configs    *projectconfigs.Manager
	analysis   *resources.Manager
	runs       *runs.Service
	history    *history.Store
	logs       *logs.Store
	retired    prometheus.Counter
	// promotionsFinished counts the orchestrator's Promotions by phase.
	promotionsFinished *prometheus.CounterVec
	// analysisFinished counts the runner's AnalysisRuns by phase.
	analysisFinished *prometheus.CounterVec
	metrics          *handlers.Metrics

	// tracer makes spans (tracing.go); nil while tracing is off.
	tracer     trace.TracerProvider
	stopTracer func(context.Context) error

	// kargoCreds are the promotion steps' and the Warehouse controller's
	// credentials (kargosteps.go).
	kargoCreds *credentials.Chain

	executor *executor.Controller // nil when it claims nothing

	access *access
	// stopOnce makes Stop idempotent; stopErr is what it returned.
	stopOnce sync.Once
	stopErr  error
	// maxConns and maxStreams bound HTTP (from the config, or derived from
	// the file descriptor limit).
	maxConns, maxStreams int
	maxProcs             int // running process tasks (fdBudget)
}

// Run starts the server and blocks until ctx is cancelled, then stops it.
func Run(ctx context.Context, cfg Config, log zerolog.Logger) error {
	a, err := Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	return a.Serve(ctx)
}

// Serve blocks until ctx is cancelled or the HTTP server fails, then stops
// the server.
func (a *App) Serve(ctx context.Context) error {
	var err error
	select {
	case <-ctx.Done():
	case err = <-a.serveErr:
		a.log.Error().Err(err).Msg("HTTP server failed")
	case err = <-a.parts.Err():
		a.log.Error().Err(err).Msg("a part of the server failed: stopping")
	}
	if stopErr := a.Stop(); stopErr != nil && err == nil {
		err = stopErr
	}
	return err
}

// Start listens at once (so /healthz answers, /readyz says why it is not
// ready, and streams are held open while the control plane starts), then
// brings everything up. The caller owns Stop.
func Start(ctx context.Context, cfg Config, log zerolog.Logger) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Absolute, because a process task's sandbox opens its output dir
	// from the task's own working directory (make run's default is
	// ./data: every process task failed to start, exit 126).
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", cfg.DataDir, err)
	}
	cfg.DataDir = dir
	a := &App{cfg: cfg, log: log, serveErr: make(chan error, 1), apiReady: make(chan struct{})}
	a.streamsStop, a.stopStreams = context.WithCancel(context.Background())
	a.logs = logs.New(a.outputRoot(), cfg.LogMaxBytes)
	a.setLimits()
	if err := a.listen(); err != nil {
		return nil, err
	}
	if a.access, err = a.newAccess(); err != nil {
		_ = a.ln.Close()
		return nil, err
	}
	a.serve()
	start := time.Now()
	a.retired, a.promotionsFinished, a.analysisFinished = newRetiredCounter(), newPromotionsCounter(), newAnalysisCounter()
	a.parts = a.newParts()
	if err := a.parts.Start(ctx); err != nil {
		// The parts that started are stopped; the HTTP server is left.
		return nil, errors.Join(err, a.shutdownHTTP())
	}
	releaseStartMemory(a.streamsStop, a.startDrained)
	log.Info().Str("listen", a.URL()).Str("controlPlane", a.cp.Source()).Dur("startupMs", time.Since(start)).Msg("ready")
	failpoint.Ready()
	return a, nil
}

// URL is the server's base URL.
func (a *App) URL() string {
	scheme := "http"
	if a.cfg.TLSCert != "" {
		scheme = "https"
	}
	return scheme + "://" + a.ln.Addr().String()
}

// setLimits raises the descriptor limit and derives the HTTP bounds the
// configuration leaves open.
func (a *App) setLimits() {
	fds, err := raiseFileLimit()
	if err != nil {
		a.log.Warn().Err(err).Msg("cannot read the file descriptor limit; assuming 1024")
		fds = 1024
	}
	conns, streams, procs := fdBudget(fds)
	a.maxConns, a.maxStreams, a.maxProcs = conns, streams, procs
	if a.cfg.MaxConnections > 0 {
		a.maxConns = a.cfg.MaxConnections
	}
	if a.cfg.MaxStreams > 0 {
		a.maxStreams = a.cfg.MaxStreams
	}
	if a.cfg.MaxProcesses > 0 {
		a.maxProcs = a.cfg.MaxProcesses
	}
	a.log.Info().Uint64("fileLimit", fds).Int("maxConnections", a.maxConns).Int("maxStreams", a.maxStreams).Int("maxProcesses", a.maxProcs).Msg("limits")
}

func (a *App) listen() error {
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.Listen, err)
	}
	if a.cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(a.cfg.TLSCert, a.cfg.TLSKey)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("TLS certificate: %w", err)
		}
		a.tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	// Past the bound, the connection idle the longest makes room, or new
	// connections wait in the kernel's backlog instead of taking
	// descriptors the control plane needs.
	a.conns = newConnLimiter(ln, a.maxConns)
	a.ln = a.conns
	return nil
}

// serve starts the HTTP server with the answers of a starting server;
// serveAPI swaps the real routes in.
func (a *App) serve() {
	starting := handlers.Starting(handlers.StartingConfig{
		Authenticator: a.access.authn, Authorizer: a.access.authz,
		AllowedHosts: a.access.hosts,
		SSE:          sse.Config{Heartbeat: a.cfg.SSEHeartbeat, Stop: a.streamsStop, Detached: &a.detached},
		Ready:        a.apiReady,
		API:          func() http.Handler { return *a.handler.Load() },
		Log:          a.log,
	})
	a.handler.Store(&starting)
	a.srv = &http.Server{
		// Outermost, so that a stream that stays in net/http parks right
		// under it (sse.Parking).
		Handler:           sse.Parking(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*a.handler.Load()).ServeHTTP(w, r) })),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          newStdLogger(a.log),
		ConnState:         a.conns.track,
	}
	a.srv.TLSConfig = a.tlsConfig
	// Streams end when the server shuts down, before it waits for handlers.
	a.srv.RegisterOnShutdown(a.stopStreams)
	go func() {
		var err error
		if a.srv.TLSConfig != nil {
			err = a.srv.ServeTLS(a.ln, "", "") // also negotiates HTTP/2
		} else {
			err = a.srv.Serve(a.ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.serveErr <- err
		}
	}()
}

// caches are the pipelines of every kind this server serves.
func (a *App) caches() []pipeline.Stats {
	stats := []pipeline.Stats{a.mgr.Cache(), a.stages.Cache(), a.freight.Cache(), a.promos.Cache(), a.warehouses.Cache(), a.configs.Cache()}
	return append(stats, a.analysis.Caches()...)
}

// synced reports whether every kind's cache is synced.
func (a *App) synced() bool {
	for _, c := range a.caches() {
		if !c.HasSynced() {
			return false
		}
	}
	return true
}

// serveAPI puts the real router behind the listener, in place of the
// "starting" answers.
func (a *App) serveAPI(restCfg *rest.Config) error {
	a.metrics = handlers.NewMetrics(handlers.Gauges{
		QueueDepth: a.notifier.QueueDepth, EventsHandled: a.notifier.EventsHandled,
		Caches: a.caches(),
	})
	a.registerStorageMetrics(a.metrics.Registry())
	router, err := handlers.NewRouter(handlers.Config{
		Manager: a.mgr, Stages: a.stages, Freight: a.freight, Warehouses: a.warehouses, ProjectConfigs: a.configs, Promotions: a.promos, Analysis: a.analysis, Runs: a.runs, Logs: a.logs, Metrics: a.metrics,
		Web:     web.Handler(web.Options{TokenFile: a.adminTokenFile(), TraceLinkTemplate: a.cfg.TraceLinkTemplate}),
		Tracing: a.tracer,
		SSE:     sse.Config{Heartbeat: a.cfg.SSEHeartbeat, Stop: a.streamsStop, Detached: &a.detached, Observer: a.metrics},
		Ready:   a.ready(restCfg),
		Synced:  a.synced,
		Log:     a.log,

		Authenticator: a.access.authn, Authorizer: a.access.authz,
		Sessions: a.access.sessions, LoginCodes: a.access.login, Throttle: a.access.throttle,
		ExecuteTaskTypes: executeTaskTypes,
		AllowedHosts:     a.access.hosts,
		CORSOrigins:      a.cfg.CORSOrigins,
		MaxStreams:       a.maxStreams,
	})
	if err != nil {
		return err
	}
	a.handler.Store(&router)
	close(a.apiReady)
	return nil
}

// executeTaskTypes run commands on the server's machine: enqueuing one
// takes the execute verb.
var executeTaskTypes = []string{"process"}

// ready is /readyz: the control plane answers, the cache is synced, and
// the history store answers a read in time and records what it is given
// (its last write did not fail, none has waited for long).
func (a *App) ready(cfg *rest.Config) func(context.Context) error {
	client, err := kubernetes.NewForConfig(cfg)
	return func(ctx context.Context) error {
		if err != nil {
			return err
		}
		for _, c := range a.caches() {
			if !c.HasSynced() {
				return fmt.Errorf("%s cache not synced", c.Name())
			}
			if err := c.WatchErr(); err != nil {
				return fmt.Errorf("%s cache cannot follow changes: %w", c.Name(), err)
			}
		}
		if err := a.history.Ping(ctx); err != nil {
			return fmt.Errorf("history store (%s) does not answer: %w", a.history, err)
		}
		if err := a.history.Health(); err != nil {
			return fmt.Errorf("history store (%s) does not record: %w", a.history, err)
		}
		status := 0
		if err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status).Error(); err != nil && status == 0 {
			return fmt.Errorf("control plane does not answer: %w", err)
		}
		if status != http.StatusOK {
			return fmt.Errorf("control plane not ready (HTTP %d)", status)
		}
		return nil
	}
}

// Manager is the action manager (for tests and benchmarks that look
// inside a running server).
func (a *App) Manager() *taskactions.Manager { return a.mgr }

// component is the logger of a part.
func (a *App) component(name string) zerolog.Logger {
	return a.log.With().Str("component", name).Logger()
}
