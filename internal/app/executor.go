package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/analysis/measure"
	"taskactions/internal/analysis/runner"
	"taskactions/internal/executor"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/executor/plugins/echo"
	httpstep "taskactions/internal/executor/plugins/http"
	"taskactions/internal/executor/plugins/process"
	"taskactions/internal/executor/plugins/sleep"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/lease"
)

// executorSetup is the executor's plugins and the task types it claims,
// decided once the control plane is known and before the manager starts
// (new actions of claimed types get the executor's finalizer).
type executorSetup struct {
	instance string
	identity string // the replica's: host name and instance
	plugins  map[string]plugins.Plugin
	claims   string // a comma list
	// outside: an executor outside this server may run the types it does
	// not; else they fail (PluginNotFound).
	outside bool
}

func (a *App) setUpExecutor() executorSetup {
	es := executorSetup{instance: randomID(), plugins: map[string]plugins.Plugin{"echo": echo.Plugin{}, "sleep": sleep.Plugin{}}}
	host, err := os.Hostname()
	if err != nil {
		// The identity stays unique by its instance; only its readability
		// in the Lease and the logs suffers.
		a.log.Warn().Err(err).Msg("no host name for the executor's identity")
	}
	es.identity = host + "_" + es.instance
	if a.processEnabled() {
		pp := process.New(es.instance, a.logs)
		pp.Confine(a.processConfinement())
		pp.Limit(a.maxProcs)
		a.processCgroups(pp)
		es.plugins["process"] = pp
	}
	if hp, err := httpstep.New(a.cfg.PromotionHTTPAllow); err == nil { // validated with the config
		es.plugins["http"] = hp
	} else {
		a.log.Error().Err(err).Msg("http plugin off")
	}
	if al, err := httpstep.ParseAllowlist(a.cfg.AnalysisHTTPAllow); err == nil { // validated with the config
		es.plugins[measure.TaskType] = measure.New(al.Client(net.DefaultResolver, 10*time.Second))
	}
	maps.Copy(es.plugins, a.kargoStepPlugins())
	es.claims = claimedTaskTypes(a.cfg.ExecutorTaskTypes, a.cp.Embedded(), es.plugins)
	es.outside = outsideExecutor(a.cfg.ExecutorTaskTypes, a.cp.Embedded())
	return es
}

// outsideExecutor: may an executor outside run what this server's does
// not? Not on the embedded control plane by default ("auto"), where
// nothing else is there: an action of a type no plugin runs fails at once
// (PluginNotFound), as in Flyte, instead of waiting for nobody. Any
// other --executor-task-types (a list, "*", "") says which types are this
// server's and leaves the others to an executor outside; so does "auto"
// on a cluster (Flyte's executor).
func outsideExecutor(flag string, embedded bool) bool { return flag != "auto" || !embedded }

// reportedTaskTypes are the root actions of Promotions and AnalysisRuns,
// which the orchestrator and the analysis runner report: no executor
// runs them.
var reportedTaskTypes = []string{promotions.RootTaskType, runner.RootTaskType}

// pending is why an action of the task type waits where an executor
// outside runs it ("" for a type this server runs, and where nothing
// outside is declared: such an action fails).
func (es executorSetup) pending(taskType string) string {
	if !es.outside || slices.Contains(reportedTaskTypes, taskType) {
		return ""
	}
	return executor.Pending(es.runTypes(), taskType)
}

// runTypes lists the types the executor runs.
func (es executorSetup) runTypes() []string {
	var out []string
	for _, t := range slices.Sorted(maps.Keys(es.plugins)) {
		if es.runs(t) {
			out = append(out, t)
		}
	}
	return out
}

// claimedTaskTypes resolves --executor-task-types: "*" is every type the
// executor has a plugin for; "auto" is that on the embedded control plane
// and nothing against a cluster, where another executor (Flyte's) may own
// the actions; a list is taken as it is.
func claimedTaskTypes(flag string, embedded bool, pl map[string]plugins.Plugin) string {
	switch flag {
	case "auto":
		if !embedded {
			return ""
		}
	case "*":
	default:
		return flag
	}
	names := slices.Sorted(maps.Keys(pl))
	return strings.Join(names, ",")
}

// runExecutor runs the built-in executor until ctx ends, unless it
// claims no task type. On an external cluster it runs under leader
// election (the embedded control plane's data-dir lock already admits one
// process), with Kargo's controllers beside it (kargoBeside).
func (a *App) runExecutor(ctx context.Context, ready func()) error {
	es := a.exec
	ex := executor.New(executor.Config{
		Manager: a.mgr, TaskTypes: es.claims, NoOutside: !es.outside, Reported: reportedTaskTypes, Plugins: es.plugins, Workers: a.cfg.ExecutorWorkers,
		MaxSystemFailures: a.cfg.MaxSystemFailures, OutputRoot: a.outputRoot(),
		ServerURL: a.URL(), TaskToken: a.access.taskToken, Metrics: a.metrics.Registry(), Log: a.component("executor"),
		Tracer: a.tracerOf(), Admit: a.kargoStepAdmit(),
	})
	if !ex.Enabled() {
		a.log.Info().Msg("executor off: no task types claimed")
		ready()
		<-ctx.Done()
		return nil
	}
	a.log.Info().Str("claims", es.claims).Bool("process", es.plugins["process"] != nil).Msg("executor")
	a.executor = ex
	ready()
	if a.kube == nil {
		return ex.Run(ctx)
	}
	cfg, beside := a.leaseConfig("executor"), a.kargoBeside()
	if beside != nil {
		cfg.Work = "executor and Kargo controllers"
	}
	return executor.RunWithLeaderElection(ctx, cfg, ex, beside)
}

// processEnabled: the process plugin runs commands sent over HTTP, so by
// default only where nobody else can send them: the embedded control
// plane with a loopback listener.
// outputRoot holds the actions' output dirs.
func (a *App) outputRoot() string { return filepath.Join(a.cfg.DataDir, "outputs") }

// runs reports whether the executor runs a task type: it claims it and
// has its plugin.
func (es executorSetup) runs(taskType string) bool {
	return es.plugins[taskType] != nil && executor.ParseTaskTypes(es.claims).Claims(taskType)
}

func (a *App) processEnabled() bool {
	switch a.cfg.ExecutorProcess {
	case "true":
		return true
	case "false":
		return false
	}
	return a.cp.Embedded() && a.cfg.loopback()
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// executorFinalizers gives new actions of the task types the executor
// claims its finalizer at creation, saving it a write per action; the
// types whose plugin holds nothing get none.
func executorFinalizers(taskTypes string, runs map[string]plugins.Plugin) func(string) []string {
	tt := executor.ParseTaskTypes(taskTypes)
	return func(taskType string) []string {
		if p := runs[taskType]; tt.Claims(taskType) && (p == nil || plugins.NeedsFinalizer(p)) {
			return []string{v1.FinalizerPlugin}
		}
		return nil
	}
}

// leaseConfig is a Lease of this replica on the cluster (its Name is the
// user's to set).
func (a *App) leaseConfig(work string) lease.Config {
	return lease.Config{
		Kube: a.kube, Namespace: a.cfg.LeaderElectionNamespace, Identity: a.exec.identity,
		Timings: a.cfg.LeaderElection, Work: work, Log: a.log,
	}
}
