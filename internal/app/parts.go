package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	kargoapi "taskactions/api/kargo/v1alpha1"
	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/analysis/resources"
	"taskactions/internal/analysis/runner"
	"taskactions/internal/controlplane"
	"taskactions/internal/executor"
	"taskactions/internal/handlers"
	"taskactions/internal/history"
	"taskactions/internal/journal"
	"taskactions/internal/kargo/freight"
	"taskactions/internal/kargo/orchestrator"
	"taskactions/internal/kargo/projectconfigs"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/kargo/stages"
	"taskactions/internal/kargo/warehouses"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/lease"
	"taskactions/internal/lifecycle"
	"taskactions/internal/runs"
	"taskactions/internal/taskactions"
	"taskactions/internal/taskactions/aborter"
	"taskactions/internal/taskactions/collector"
	"taskactions/internal/taskactions/notifier"
	"taskactions/internal/taskactions/retention"
)

// newParts lists everything of the server that runs, in the order it
// starts; it stops in reverse. Each part is built when its turn comes,
// from what the parts before it made: the control plane decides the
// executor's setup, the caches need the control plane, the controllers
// the caches, the executor the API's metrics. Adding a controller is one
// Add here.
func (a *App) newParts() *lifecycle.Group {
	g := lifecycle.NewGroup()
	// First, so that it stops last: every span the other parts end is
	// flushed before it goes.
	g.Add("tracing", lifecycle.Service(a.startTracing, a.stopTracing))
	g.Add("control plane", lifecycle.Func(a.runControlPlane))
	g.Add("history", lifecycle.Service(a.openHistory, a.closeHistory))
	g.Add("actions", lifecycle.Service(a.startActions, func() error { a.mgr.StopWatching(); return nil }))
	g.Add("run notifications", lifecycle.Func(func(ctx context.Context, ready func()) error { return a.notifier.Run(ctx, ready) }))
	g.Add("stages", lifecycle.Service(a.startStages, func() error { a.stages.Stop(); return nil }))
	g.Add("freight", lifecycle.Service(a.startFreight, func() error { a.freight.Stop(); return nil }))
	g.Add("promotions", lifecycle.Service(a.startPromotions, func() error { a.promos.Stop(); return nil }))
	g.Add("warehouses", lifecycle.Service(a.startWarehouses, func() error { a.warehouses.Stop(); return nil }))
	g.Add("project configs", lifecycle.Service(a.startProjectConfigs, func() error { a.configs.Stop(); return nil }))
	g.Add("analysis", lifecycle.Service(a.startAnalysis, func() error { a.analysis.Stop(); return nil }))
	g.Add("api", lifecycle.Service(func(context.Context) error { return a.serveAPI(a.restCfg) }, nil))
	g.Add("metrics listener", lifecycle.Func(a.runMetricsListener))
	g.Add("aborter", lifecycle.Func(func(ctx context.Context, ready func()) error {
		return aborter.New(a.mgr, abortWorkers, a.component("aborter")).Run(ctx, ready)
	}))
	g.Add("collector", lifecycle.Func(a.runCollector))
	g.Add("retention", lifecycle.Background(a.runRetention))
	g.Add("output sweeper", lifecycle.Background(a.runOutputSweeper))
	g.Add("kargo controllers", lifecycle.Func(a.runKargoControllers))
	g.Add("executor", lifecycle.Func(a.runExecutor))
	return g
}

// abortWorkers is how many abort writes are in flight at once: the API
// server and etcd batch concurrent writes, so a large abort finishes about
// twice as fast with 32 as with 8 (measured: 5,000 children in 36 s).
const abortWorkers = 32

// runControlPlane starts the control plane, decides what the executor
// runs (which new actions' finalizers depend on), and makes the clients
// every later part uses. It ends with the control plane's failure: a
// server whose etcd died must not go on serving a cache that no longer
// changes.
func (a *App) runControlPlane(ctx context.Context, ready func()) error {
	cp, err := controlplane.Start(ctx, controlplane.Config{DataDir: a.cfg.DataDir, Kubeconfig: a.cfg.Kubeconfig, EtcdQuota: a.cfg.EtcdQuota, Log: a.log})
	if err != nil {
		return err
	}
	a.cp = cp
	if err := a.useControlPlane(); err != nil {
		return errors.Join(err, cp.Stop())
	}
	ready()
	select {
	case <-ctx.Done():
		return cp.Stop()
	case err := <-cp.Err():
		return errors.Join(err, cp.Stop())
	}
}

// useControlPlane makes the clients of the control plane and the
// executor's setup.
func (a *App) useControlPlane() error {
	a.restCfg = a.cp.RESTConfig()
	a.restCfg.Wrap(executor.RefuseLate) // the executor's fence holds to the send
	a.restCfg.Wrap(lease.Fenced)        // and the Kargo controllers'
	es := a.setUpExecutor()
	a.exec = es
	var err error
	if !a.cp.Embedded() {
		// The core API client of an external cluster (the embedded control
		// plane has no core API). The replica's identity names its requests
		// in the cluster's audit log; the field manager (the user agent up
		// to "/") stays ours.
		a.restCfg.UserAgent = controlplane.FieldManager + "/" + es.identity
		if a.kube, err = kubernetes.NewForConfig(a.restCfg); err != nil {
			return err
		}
		a.useKargoSecrets(a.kube)
	}
	if a.access.cluster != nil {
		if a.kube == nil {
			return fmt.Errorf("--auth=kubernetes needs a cluster: the embedded control plane has no TokenReview or SubjectAccessReview")
		}
		a.access.cluster.SetClient(a.kube)
	}
	a.client, err = versioned.NewForConfig(a.restCfg)
	return err
}

// openHistory opens the history store, and keeps logouts and task logs
// in it.
func (a *App) openHistory(ctx context.Context) error {
	var err error
	if a.history, err = history.Open(ctx, a.cfg.HistoryDSN, a.cfg.DataDir); err != nil {
		return err
	}
	if a.history.SetAside != "" {
		a.log.Error().Stringer("store", a.history).Str("setAside", a.history.SetAside).
			Msg("the history store was damaged: it was renamed and a fresh one started, filled from the control plane's live actions; retired runs are only in the renamed file (sqlite3 .recover can salvage it)")
	}
	a.log.Info().Stringer("store", a.history).Bool("created", a.history.Created).Msg("history store open")
	if err := a.access.keepLogouts(ctx, a.history, a.log); err != nil {
		return errors.Join(err, a.history.Close())
	}
	// Task logs go there too, for every replica to read (internal/logs).
	logsLog := a.component("logs")
	a.logs.Share(a.history, func(err error) { logsLog.Warn().Err(err).Msg("a log stays on this replica's disk for now") })
	return nil
}

func (a *App) closeHistory() error {
	a.logs.Share(nil, nil)
	if a.access.stopLogouts != nil {
		a.access.stopLogouts()
	}
	if err := a.history.Close(); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// journalConfig bounds every kind's replay journal.
func (a *App) journalConfig() journal.Config {
	return journal.Config{MaxEvents: a.cfg.SSEReplayEvents, MaxAge: a.cfg.SSEReplayAge, MailboxSize: a.cfg.SSEMailbox}
}

// startActions starts the action manager and the run service, and
// restores the run service's view of the live actions. The notifier is
// made here, as the manager's first list is given to it; it runs as the
// next part.
func (a *App) startActions(ctx context.Context) error {
	a.runs = runs.New(a.history, a.journalConfig(), a.component("runs"))
	a.notifier = notifier.New(notifier.Config{
		Runs: a.runs, Warm: handlers.WarmAction, Workers: a.cfg.Workers,
		Log: a.component("notifier"),
	})
	a.mgr = taskactions.New(taskactions.Config{
		Client: a.client, Stored: a.cp.StoredObjects(v1.SchemeGroupVersion.Group, "taskactions"),
		Kube: a.kube, NamespaceTemplate: a.cfg.NamespaceTemplate, Runs: a.runs, OnEvent: a.notifier.Observe, History: a.history, Log: a.component("manager"),
		Finalizers: executorFinalizers(a.exec.claims, a.exec.plugins),
		BuiltIn:    a.exec.runs,
		Pending:    a.exec.pending,
		Journal:    a.journalConfig(),
		Tracer:     a.tracerOf(),
	})
	if err := a.mgr.StartWatching(ctx); err != nil {
		return err
	}
	if err := a.runs.Restore(ctx, func() []runs.Action { return notifier.Records(a.mgr.Cache()) }); err != nil {
		a.mgr.StopWatching()
		return err
	}
	return nil
}

func (a *App) startStages(ctx context.Context) error {
	a.stages = stages.New(stages.Config{
		Client: a.client, Kube: a.kube, KargoProjects: a.cp.KargoInstalled(), Journal: a.journalConfig(),
		Log: a.component("stages"),
	})
	return a.stages.Start(ctx)
}

func (a *App) startFreight(ctx context.Context) error {
	a.freight = freight.New(freight.Config{Client: a.client, Stages: a.stages, Journal: a.journalConfig(), Log: a.component("freight")})
	return a.freight.Start(ctx)
}

func (a *App) startPromotions(ctx context.Context) error {
	a.promos = promotions.New(promotions.Config{
		Client: a.client, Stages: a.stages, Freight: a.freight, Journal: a.journalConfig(),
		Log: a.component("promotions"),
	})
	return a.promos.Start(ctx)
}

func (a *App) startWarehouses(ctx context.Context) error {
	a.warehouses = warehouses.New(warehouses.Config{Client: a.client, Stages: a.stages, Journal: a.journalConfig(), Log: a.component("warehouses")})
	return a.warehouses.Start(ctx)
}

func (a *App) startProjectConfigs(ctx context.Context) error {
	a.configs = projectconfigs.New(projectconfigs.Config{Client: a.client, Stages: a.stages, Journal: a.journalConfig(), Log: a.component("projectconfigs")})
	return a.configs.Start(ctx)
}

// startAnalysis starts the caches of Argo Rollouts' analysis kinds, whose
// projects are Kargo's.
func (a *App) startAnalysis(ctx context.Context) error {
	a.analysis = resources.New(resources.Config{Client: a.client, Projects: a.stages, Journal: a.journalConfig(), Log: a.component("analysis")})
	return a.analysis.Start(ctx)
}

// runMetricsListener serves /metrics, without a token, on
// --metrics-listen (when set) until ctx ends.
func (a *App) runMetricsListener(ctx context.Context, ready func()) error {
	if a.cfg.MetricsListen == "" {
		ready()
		<-ctx.Done()
		return nil
	}
	ln, err := net.Listen("tcp", a.cfg.MetricsListen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.cfg.MetricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: newStdLogger(a.log)}
	a.log.Info().Str("listen", ln.Addr().String()).Msg("serving /metrics without a token")
	ready()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
		if err := srv.Close(); err != nil {
			return err
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// runCollector deletes the descendants of a deleted action on the
// embedded control plane, which has no garbage collector.
func (a *App) runCollector(ctx context.Context, ready func()) error {
	if !a.cp.Embedded() {
		ready()
		<-ctx.Done()
		return nil
	}
	return collector.New(a.mgr, 0, a.component("collector")).Run(ctx, ready)
}

// runRetention deletes finished actions from the control plane after
// --retention (history keeps them).
func (a *App) runRetention(ctx context.Context) error {
	if a.cfg.Retention <= 0 {
		<-ctx.Done()
		return nil
	}
	return retention.New(retention.Config{
		Actions: a.mgr, History: a.history, Client: a.client.FlyteV1(), After: a.cfg.Retention,
		Retired: a.retired.Inc, Log: a.component("retention"),
	}).Run(ctx)
}

// kargoLease is the Lease Kargo's controllers run under on a cluster
// where this replica runs no executor.
const kargoLease = "taskactions-kargo"

// kargoControllersOn reports whether Kargo's controllers run in this
// server (--kargo-controllers).
func (a *App) kargoControllersOn() bool {
	return a.cfg.KargoControllers == "true" || (a.cfg.KargoControllers == "auto" && a.cp.Embedded())
}

// kargoBesideExecutor reports whether Kargo's controllers run under the
// executor's Lease: on a cluster, where this replica runs the executor.
// The orchestrator reads a step's outputs from the executor's output
// dirs, and a Promotion's steps share a working directory on its disk,
// so both must lead on one replica.
func (a *App) kargoBesideExecutor() bool {
	return a.kube != nil && a.kargoControllersOn() && executor.ParseTaskTypes(a.exec.claims).Any()
}

// runKargoControllers runs the Stage and Warehouse controllers and the
// Promotion orchestrator where no Kargo controller does (--kargo-controllers).
// On a cluster they run only while this replica leads: beside the
// executor, under its Lease (runExecutor), or under their own Lease where
// this replica runs no executor; else it waits for the stop. The first of
// them to fail ends the others with its error.
//
// Without a lease it is ready once every controller is, so a controller
// that cannot start fails the server's start; under a lease it is
// ready at once, as this replica may never lead.
func (a *App) runKargoControllers(ctx context.Context, ready func()) error {
	if !a.kargoControllersOn() || a.kargoBesideExecutor() {
		ready()
		<-ctx.Done()
		return nil
	}
	if a.kube == nil {
		return a.kargoControllers().Run(ctx, ready)
	}
	cfg := a.leaseConfig("kargo controllers")
	cfg.Name = kargoLease
	clock := lease.NewClock(lease.NewLock(cfg))
	cfg.Lock = clock
	fence := lease.NewFence(clock, cfg.Timings.RenewDeadline)
	ready()
	return lease.Run(ctx, cfg, func(ctx context.Context) error {
		// Every write the controllers make is fenced by the Lease, as the
		// executor's are: none goes out once another replica may lead.
		return a.kargoControllers().Run(lease.WithFence(ctx, fence), func() {})
	})
}

// kargoBeside is the work runExecutor runs beside the executor under its
// Lease: Kargo's controllers, when kargoBesideExecutor.
func (a *App) kargoBeside() func(context.Context) error {
	if !a.kargoBesideExecutor() {
		return nil
	}
	return func(ctx context.Context) error { return a.kargoControllers().Run(ctx, func() {}) }
}

// kargoControllers is the group of Kargo's controllers: they start and
// stop together, and one that fails stops the others.
func (a *App) kargoControllers() *lifecycle.Group {
	g := lifecycle.NewGroup()
	g.Add("stage controller", stages.NewController(a.stages, stages.ControllerConfig{
		Promotions: a.promos, Freight: a.freight, Configs: a.configs, Verifications: a.verifications(),
		Workers: 4, Log: a.component("stage-controller"),
	}))
	g.Add("warehouse controller", warehouses.NewController(a.warehouses, warehouses.ControllerConfig{
		Freight: a.freight, Credentials: a.kargoCredentials(), AllowLocalRepos: a.cfg.PromotionGitLocal,
		WorkDir: filepath.Join(a.cfg.DataDir, "kargo-discovery"), Log: a.component("warehouse-controller"),
	}))
	if a.analysis != nil && !a.cp.RolloutsInstalled() {
		g.Add("analysis runner", runner.New(runner.Config{
			Runs: a.analysis, Actions: a.mgr, Jobs: a.cfg.AnalysisJobs && a.processEnabled(), Workers: 4,
			Log:      a.component("analysis-runner"),
			Finished: func(phase rolloutsapi.AnalysisPhase) { a.analysisFinished.WithLabelValues(string(phase)).Inc() },
		}))
	}
	g.Add("promotion orchestrator", orchestrator.New(orchestrator.Config{
		Promotions: a.promos, Stages: a.stages.Cache(), Freight: a.freight,
		Actions: a.mgr, Runnable: a.exec.runs, OutputRoot: a.outputRoot(), WorkDirs: a.kargoWork(), Workers: 8,
		Log: a.component("promotions"), Finished: a.promotionFinished,
	}))
	return g
}

// promotionFinished counts a Promotion's terminal phase.
func (a *App) promotionFinished(phase kargoapi.PromotionPhase) {
	a.promotionsFinished.WithLabelValues(string(phase)).Inc()
}

// newPromotionsCounter counts Promotions by their terminal phase; it is
// registered with the storage metrics whether or not the orchestrator runs.
func newPromotionsCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskactions_promotions_finished_total", Help: "Promotions this server's orchestrator ended, by phase (Succeeded, Failed, Errored, Aborted).",
	}, []string{"phase"})
	for _, ph := range []kargoapi.PromotionPhase{kargoapi.PromotionPhaseSucceeded, kargoapi.PromotionPhaseFailed, kargoapi.PromotionPhaseErrored, kargoapi.PromotionPhaseAborted} {
		c.WithLabelValues(string(ph)) // present at zero from the start
	}
	return c
}

// newRetiredCounter counts what retention deleted; it is registered with
// the storage metrics whether or not retention runs.
func newRetiredCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{
		Name: "taskactions_retention_retired_total", Help: "Finished actions whose objects retention deleted from the control plane (history keeps them).",
	})
}
