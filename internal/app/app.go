package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"taskactions/internal/controlplane"
	"taskactions/internal/executor"
	"taskactions/internal/handlers"
	"taskactions/internal/history"
	"taskactions/internal/journal"
	"taskactions/internal/kargo/credentials"
	"taskactions/internal/kargo/freight"
	"taskactions/internal/kargo/orchestrator"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/kargo/stages"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/logs"
	"taskactions/internal/pipeline"
	"taskactions/internal/runs"
	"taskactions/internal/sse"
	"taskactions/internal/taskactions"
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

	cp      *controlplane.ControlPlane
	mgr     *taskactions.Manager
	stages  *stages.Manager
	freight *freight.Manager
	promos  *promotions.Manager
	runs    *runs.Service
	history *history.Store
	logs    *logs.Store
	retired prometheus.Counter
	metrics *handlers.Metrics

	// kargoCreds are the promotion steps' credentials (kargosteps.go).
	kargoCreds *credentials.Chain

	executor        *executor.Controller // nil when it claims nothing
	stopExecutor    context.CancelFunc
	executorDone    chan struct{}
	stopControllers context.CancelFunc
	controllersDone chan struct{}

	access     *access
	metricsSrv *http.Server
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
	a := &App{cfg: cfg, log: log, serveErr: make(chan error, 1), apiReady: make(chan struct{})}
	a.streamsStop, a.stopStreams = context.WithCancel(context.Background())
	a.logs = logs.New(a.outputRoot(), cfg.LogMaxBytes)
	a.setLimits()
	if err := a.listen(); err != nil {
		return nil, err
	}
	var err error
	if a.access, err = a.newAccess(); err != nil {
		_ = a.ln.Close()
		return nil, err
	}
	a.serve()
	start := time.Now()
	if err := a.startComponents(ctx); err != nil {
		_ = a.Stop()
		return nil, err
	}
	releaseStartMemory(a.streamsStop, a.startDrained)
	log.Info().Str("listen", a.URL()).Str("controlPlane", a.cp.Source()).Dur("startupMs", time.Since(start)).Msg("ready")
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

func (a *App) startComponents(ctx context.Context) error {
	cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: a.cfg.DataDir, Kubeconfig: a.cfg.Kubeconfig, EtcdQuota: a.cfg.EtcdQuota, Log: a.log})
	if err != nil {
		return err
	}
	a.cp = cp
	restCfg := cp.RESTConfig()
	restCfg.Wrap(executor.RefuseLate) // the executor's fence holds to the send
	es := a.setUpExecutor()
	// The core API client of an external cluster (nil on the embedded
	// control plane, which has no core API).
	var kube kubernetes.Interface
	if !cp.Embedded() {
		// The replica's identity names its requests in the cluster's audit
		// log; the field manager (the user agent up to "/") stays ours.
		restCfg.UserAgent = controlplane.FieldManager + "/" + es.identity
		if kube, err = kubernetes.NewForConfig(restCfg); err != nil {
			return err
		}
		a.useKargoSecrets(kube)
	}
	if a.access.cluster != nil {
		if kube == nil {
			return fmt.Errorf("--auth=kubernetes needs a cluster: the embedded control plane has no TokenReview or SubjectAccessReview")
		}
		a.access.cluster.SetClient(kube)
	}
	if err := a.startManager(ctx, restCfg, kube, es); err != nil {
		return err
	}
	a.startControllers(es)
	if err := a.serveAPI(restCfg); err != nil {
		return err
	}
	if err := a.serveMetrics(); err != nil {
		return err
	}
	return a.startExecutor(kube, es)
}

// startManager starts the action manager and the run service on the
// control plane. kube is the core API client of an external cluster (nil
// on the embedded control plane, which has no core API).
func (a *App) startManager(ctx context.Context, restCfg *rest.Config, kube kubernetes.Interface, es executorSetup) error {
	client, err := versioned.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	journalCfg := journal.Config{MaxEvents: a.cfg.SSEReplayEvents, MaxAge: a.cfg.SSEReplayAge, MailboxSize: a.cfg.SSEMailbox}
	if a.history, err = history.Open(ctx, a.cfg.HistoryDSN, a.cfg.DataDir); err != nil {
		return err
	}
	if a.history.SetAside != "" {
		a.log.Error().Stringer("store", a.history).Str("setAside", a.history.SetAside).
			Msg("the history store was damaged: it was renamed and a fresh one started, filled from the control plane's live actions; retired runs are only in the renamed file (sqlite3 .recover can salvage it)")
	}
	a.log.Info().Stringer("store", a.history).Bool("created", a.history.Created).Msg("history store open")
	if err := a.access.keepLogouts(ctx, a.history, a.log); err != nil {
		return err
	}
	a.runs = runs.New(a.history, journalCfg, a.log.With().Str("component", "runs").Logger())
	a.mgr = taskactions.New(taskactions.Config{
		Client: client, Kube: kube, NamespaceTemplate: a.cfg.NamespaceTemplate, Workers: a.cfg.Workers,
		Notifier: a.runs, History: a.history, Log: a.log.With().Str("component", "manager").Logger(),
		Finalizers: executorFinalizers(es.claims),
		BuiltIn:    es.runs,
		Pending:    es.pending,
		Journal:    journalCfg,
		Warm:       handlers.WarmAction,
	})
	if err := a.mgr.StartWatching(ctx); err != nil {
		return err
	}
	if err := a.runs.Restore(ctx, a.mgr.RunsActions); err != nil {
		return err
	}
	a.stages = stages.New(stages.Config{
		Client: client, Kube: kube, KargoProjects: a.cp.KargoInstalled(), Journal: journalCfg,
		Log: a.log.With().Str("component", "stages").Logger(),
	})
	if err := a.stages.Start(ctx); err != nil {
		return err
	}
	a.freight = freight.New(freight.Config{
		Client: client, Stages: a.stages, Journal: journalCfg,
		Log: a.log.With().Str("component", "freight").Logger(),
	})
	if err := a.freight.Start(ctx); err != nil {
		return err
	}
	a.promos = promotions.New(promotions.Config{
		Client: client, Stages: a.stages, Freight: a.freight, Journal: journalCfg,
		Log: a.log.With().Str("component", "promotions").Logger(),
	})
	if err := a.promos.Start(ctx); err != nil {
		return err
	}
	return nil
}

// caches are the pipelines of every kind this server serves.
func (a *App) caches() []pipeline.Stats {
	return []pipeline.Stats{a.mgr.Cache(), a.stages.Cache(), a.freight.Cache(), a.promos.Cache()}
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
		QueueDepth: a.mgr.QueueDepth, EventsHandled: a.mgr.EventsHandled,
		Caches: a.caches(),
	})
	a.registerStorageMetrics(a.metrics.Registry())
	router, err := handlers.NewRouter(handlers.Config{
		Manager: a.mgr, Stages: a.stages, Freight: a.freight, Promotions: a.promos, Runs: a.runs, Logs: a.logs, Metrics: a.metrics, Web: web.Handler(),
		SSE:    sse.Config{Heartbeat: a.cfg.SSEHeartbeat, Stop: a.streamsStop, Detached: &a.detached},
		Ready:  a.ready(restCfg),
		Synced: a.synced,
		Log:    a.log,

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

// serveMetrics serves /metrics, without a token, on --metrics-listen.
func (a *App) serveMetrics() error {
	if a.cfg.MetricsListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", a.cfg.MetricsListen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.MetricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.Handler())
	a.metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: newStdLogger(a.log)}
	go func() {
		if err := a.metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.serveErr <- fmt.Errorf("metrics listener: %w", err)
		}
	}()
	a.log.Info().Str("listen", ln.Addr().String()).Msg("serving /metrics without a token")
	return nil
}

// abortWorkers is how many abort writes are in flight at once: the API
// server and etcd batch concurrent writes, so a large abort finishes about
// twice as fast with 32 as with 8 (measured: 5,000 children in 36 s).
const abortWorkers = 32

// startControllers starts the background work: the aborter carries
// aborts down to descendants, and, on the embedded control plane, which
// has no garbage collector, the collector deletes the descendants of a
// deleted action; the Stage controller and the Promotion orchestrator run
// where no Kargo controller does (--kargo-controllers).
func (a *App) startControllers(es executorSetup) {
	ctx, cancel := context.WithCancel(context.Background())
	a.stopControllers, a.controllersDone = cancel, make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = taskactions.NewAborter(a.mgr, abortWorkers, a.log.With().Str("component", "aborter").Logger()).Run(ctx)
	})
	if a.cp.Embedded() {
		wg.Go(func() {
			_ = taskactions.NewCollector(a.mgr, 0, a.log.With().Str("component", "collector").Logger()).Run(ctx)
		})
	}
	a.retired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "taskactions_retention_retired_total", Help: "Finished actions whose objects retention deleted from the control plane (history keeps them).",
	})
	if a.cfg.Retention > 0 {
		r := taskactions.NewRetirer(a.mgr, a.cfg.Retention, a.log.With().Str("component", "retention").Logger())
		r.Retired = a.retired.Inc
		wg.Go(func() { _ = r.Run(ctx) })
	}
	if a.cfg.KargoControllers == "true" || (a.cfg.KargoControllers == "auto" && a.cp.Embedded()) {
		wg.Go(func() {
			_ = stages.NewController(a.stages, a.promos, a.freight, 4, a.log.With().Str("component", "stage-controller").Logger()).Run(ctx)
		})
		wg.Go(func() {
			_ = orchestrator.New(orchestrator.Config{
				Promotions: a.promos, Stages: a.stages.Cache(), Freight: a.freight,
				Actions: a.mgr, Runnable: es.runs, OutputRoot: a.outputRoot(), WorkDirs: a.kargoWork(), Workers: 8,
				Log: a.log.With().Str("component", "promotions").Logger(),
			}).Run(ctx)
		})
	}
	go func() {
		wg.Wait()
		close(a.controllersDone)
	}()
}

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
