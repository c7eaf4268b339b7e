package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/executor/plugins/echo"
	"taskactions/internal/executor/plugins/process"
	"taskactions/internal/executor/plugins/sleep"
)

// startExecutor runs the built-in executor unless it claims no task type.
// On an external cluster it runs under leader election (kube is nil on
// the embedded control plane, whose data-dir lock already admits one
// process).
func (a *App) startExecutor(kube kubernetes.Interface) error {
	instance := randomID()
	pl := map[string]plugins.Plugin{"echo": echo.Plugin{}, "sleep": sleep.Plugin{}}
	if a.processEnabled() {
		pl["process"] = process.New(instance)
	}
	ex := executor.New(executor.Config{
		Manager: a.mgr, TaskTypes: a.cfg.ExecutorTaskTypes, Plugins: pl, Workers: a.cfg.ExecutorWorkers,
		MaxSystemFailures: a.cfg.MaxSystemFailures, OutputRoot: filepath.Join(a.cfg.DataDir, "outputs"),
		ServerURL: a.URL(), TaskToken: a.access.taskToken, Metrics: a.metrics.Registry(), Log: a.log.With().Str("component", "executor").Logger(),
	})
	if !ex.Enabled() {
		a.log.Info().Msg("executor off: no task types claimed")
		return nil
	}
	names := make([]string, 0, len(pl))
	for name := range pl {
		names = append(names, name)
	}
	a.log.Info().Strs("plugins", names).Bool("process", pl["process"] != nil).Msg("executor plugins")
	ctx, cancel := context.WithCancel(context.Background())
	a.stopExecutor, a.executorDone = cancel, make(chan struct{})
	go func() {
		defer close(a.executorDone)
		if kube == nil {
			_ = ex.Run(ctx)
			return
		}
		host, _ := os.Hostname()
		executor.RunWithLeaderElection(ctx, kube, a.cfg.LeaderElectionNamespace, host+"_"+instance, ex, a.log)
	}()
	return nil
}

// processEnabled: the process plugin runs commands sent over HTTP, so by
// default only where nobody else can send them: the embedded control
// plane with a loopback listener.
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
// claims its finalizer at creation, saving it a write per action.
func executorFinalizers(taskTypes string) func(string) []string {
	tt := executor.ParseTaskTypes(taskTypes)
	return func(taskType string) []string {
		if tt.Claims(taskType) {
			return []string{v1.FinalizerPlugin}
		}
		return nil
	}
}
