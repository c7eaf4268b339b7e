// Package resources serves Argo Rollouts' analysis kinds
// (argoproj.io/v1alpha1): AnalysisTemplates and AnalysisRuns in a
// project's namespace, and ClusterAnalysisTemplates for every project.
// Each goes through the same pipeline as Kargo's kinds (one informer,
// each namespace's objects sorted by name, each view encoded once, a
// journal for resumable streams); one generic Objects serves all three
// (objects.go), each kind saying in kinds.go what is its own: its client,
// and Rollouts' rules for its writes (package rules).
//
// Nothing here runs an AnalysisRun: on a cluster with Rollouts, its
// controller does.
package resources

import (
	"context"

	"github.com/rs/zerolog"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/journal"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/pipeline"
)

// Projects says what a project is, so that the analysis kinds agree with
// Kargo's on it (stages.Manager).
type Projects interface {
	// CheckProject reports whether a project can be read.
	CheckProject(ctx context.Context, project string) error
	// CheckProjectForWrite is CheckProject before a write (on a cluster
	// without Kargo, the project's namespace is created).
	CheckProjectForWrite(ctx context.Context, project string) error
}

// Config holds the manager's dependencies.
type Config struct {
	Client   versioned.Interface
	Projects Projects
	Journal  journal.Config
	Log      zerolog.Logger
}

// Manager holds the three kinds. It is safe for concurrent use after
// New.
type Manager struct {
	Templates        *Objects[*rolloutsapi.AnalysisTemplate]
	ClusterTemplates *Objects[*rolloutsapi.ClusterAnalysisTemplate]
	Runs             *Objects[*rolloutsapi.AnalysisRun]
	client           versioned.Interface
}

// New returns a stopped manager; Start starts it.
func New(cfg Config) *Manager {
	return &Manager{
		Templates:        newObjects(templateKind(cfg), cfg),
		ClusterTemplates: newObjects(clusterTemplateKind(cfg), cfg),
		Runs:             newObjects(runKind(cfg), cfg),
		client:           cfg.Client,
	}
}

// Start starts the three caches and returns once they are synced; on an
// error, those started are stopped.
func (m *Manager) Start(ctx context.Context) error {
	for _, start := range []func(context.Context) error{m.Templates.cache.Start, m.ClusterTemplates.cache.Start, m.Runs.cache.Start} {
		if err := start(ctx); err != nil {
			m.Stop()
			return err
		}
	}
	return nil
}

// Stop stops the caches.
func (m *Manager) Stop() {
	m.Templates.cache.Stop()
	m.ClusterTemplates.cache.Stop()
	m.Runs.cache.Stop()
}

// Caches are the three pipelines (metrics, readiness).
func (m *Manager) Caches() []pipeline.Stats {
	return []pipeline.Stats{m.Templates.cache, m.ClusterTemplates.cache, m.Runs.cache}
}
