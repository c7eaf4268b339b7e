package app

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	kargoapi "taskactions/api/kargo/v1alpha1"
	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/analysis/resources"
	"taskactions/internal/kargo/rules"
	"taskactions/internal/kargo/stages"
	"taskactions/internal/kargo/verification"
	"taskactions/internal/pipeline"
)

// verifications are the Stage controller's way to AnalysisRuns; nil
// where none are served.
func (a *App) verifications() stages.Verifications {
	if a.analysis == nil {
		return nil
	}
	return stageVerifications{
		Verifiers: verification.New(verification.Config{Runs: a.analysis, Templates: a.analysis, Freight: a.freightByName}),
		Manager:   a.analysis,
	}
}

// stageVerifications are verifications over this server's AnalysisRuns.
type stageVerifications struct {
	*verification.Verifiers
	*resources.Manager
}

func (v stageVerifications) For(ctx context.Context) rules.Verifier { return v.Verifiers.For(ctx) }

// freightByName reads a project's Freight by name only; nil, nil when
// there is none.
func (a *App) freightByName(ctx context.Context, project, name string) (*kargoapi.Freight, error) {
	f, err := a.freight.Named(ctx, project, name, "")
	if errors.Is(err, pipeline.ErrNotFound) || (err == nil && f != nil && f.Name != name) {
		return nil, nil
	}
	return f, err
}

// newAnalysisCounter counts AnalysisRuns by the phase the runner ended
// them in (a Stage's verification outcome, where a Stage made the run).
func newAnalysisCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "taskactions_analysis_runs_finished_total",
		Help: "AnalysisRuns this server's runner ended, by phase (Successful, Failed, Error, Inconclusive).",
	}, []string{"phase"})
	for _, ph := range []rolloutsapi.AnalysisPhase{rolloutsapi.AnalysisPhaseSuccessful, rolloutsapi.AnalysisPhaseFailed, rolloutsapi.AnalysisPhaseError, rolloutsapi.AnalysisPhaseInconclusive} {
		c.WithLabelValues(string(ph)) // present at zero from the start
	}
	return c
}
