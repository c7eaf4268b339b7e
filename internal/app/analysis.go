package app

import (
	"github.com/prometheus/client_golang/prometheus"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/analysis/resources"
	"taskactions/internal/kargo/stages"
	"taskactions/internal/kargo/verification"
)

// verifications are the Stage controller's way to AnalysisRuns; nil
// where none are served.
func (a *App) verifications() stages.Verifications {
	if a.analysis == nil {
		return nil
	}
	return stageVerifications{
		Verifiers: verification.New(verification.Config{Runs: a.analysis, Templates: a.analysis, Freight: a.freight.ByName}),
		Manager:   a.analysis,
	}
}

// stageVerifications are verifications over this server's AnalysisRuns.
type stageVerifications struct {
	*verification.Verifiers
	*resources.Manager
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
