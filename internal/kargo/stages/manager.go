// Package stages serves Kargo Stages (kargo.akuity.io/v1alpha1) through the
// same pipeline as TaskActions: one informer, each project's Stages sorted
// by name, each Stage's view encoded once, a journal for resumable streams.
// What is Stage's own is here: projects, Kargo's validation and defaulting
// on every write, optimistic concurrency, refresh, and (controller.go) the
// Stage controller of the embedded control plane.
package stages

import (
	"context"
	"strings"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/journal"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/pipeline"
)

// Config holds the manager's dependencies.
type Config struct {
	Client versioned.Interface
	// Kube reads and creates namespaces on a cluster; nil on the embedded
	// control plane, where any valid project name is a project.
	Kube kubernetes.Interface
	// KargoProjects: Kargo is installed, so a project is a namespace
	// labelled kargo.akuity.io/project=true, as Kargo requires.
	KargoProjects bool
	Journal       journal.Config
	Log           zerolog.Logger
}

// Manager is safe for concurrent use after New.
type Manager struct {
	cfg      Config
	client   versioned.Interface
	stages   *pipeline.Cache[*kargoapi.Stage, *Update]
	projects projects
}

// New returns a stopped manager; Start starts it.
func New(cfg Config) *Manager {
	m := &Manager{cfg: cfg, client: cfg.Client, projects: projects{kube: cfg.Kube, kargo: cfg.KargoProjects}}
	m.stages = pipeline.New(m.kind(), cfg.Log)
	return m
}

// kind describes Stages to the pipeline: by project (namespace), each
// project's list sorted by name.
func (m *Manager) kind() pipeline.Kind[*kargoapi.Stage, *Update] {
	return pipeline.ByNamespace(pipeline.Kind[*kargoapi.Stage, *Update]{
		Name:      "Stage",
		ListWatch: cache.NewListWatchFromClient(m.client.KargoV1alpha1().RESTClient(), "stages", metav1.NamespaceAll, fields.Everything()),
		Example:   &kargoapi.Stage{},
		Compare:   func(a, b *kargoapi.Stage) int { return strings.Compare(a.Name, b.Name) },
		View:      viewOf,
		Same:      pipeline.SameObject[*kargoapi.Stage],
		Journal:   m.cfg.Journal,
	})
}

// Start starts the cache and returns once it is synced.
func (m *Manager) Start(ctx context.Context) error { return m.stages.Start(ctx) }

// Stop stops the cache.
func (m *Manager) Stop() { m.stages.Stop() }

// Cache is the Stage pipeline (metrics, readiness, controllers).
func (m *Manager) Cache() *pipeline.Cache[*kargoapi.Stage, *Update] { return m.stages }

// Journal exposes cursor formatting for the stream layer.
func (m *Manager) Journal() *journal.Journal[*Update] { return m.stages.Journal() }
