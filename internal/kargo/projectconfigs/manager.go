// Package projectconfigs serves Kargo's ProjectConfig
// (kargo.akuity.io/v1alpha1): one per project, named after it, holding the
// project's promotion policies, which say what Stages the Stage controller
// auto-promotes. It is served through the same pipeline as Stages (one
// informer, each view encoded once); what is ProjectConfig's own is here:
// the singleton's reads and writes, with Kargo's validation, and the
// cached config the Stage controller reads.
package projectconfigs

import (
	"context"
	"strings"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/journal"
	"taskactions/internal/kargo/stages"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/pipeline"
)

// Config holds the manager's dependencies.
type Config struct {
	Client versioned.Interface
	// Stages says what a project is (its CheckProject), so that every
	// Kargo kind agrees on it.
	Stages  *stages.Manager
	Journal journal.Config
	Log     zerolog.Logger
}

// Manager is safe for concurrent use after New.
type Manager struct {
	client  versioned.Interface
	stages  *stages.Manager
	configs *pipeline.Cache[*kargoapi.ProjectConfig, *View]
}

// New returns a stopped manager; Start starts it.
func New(cfg Config) *Manager {
	return &Manager{
		client: cfg.Client, stages: cfg.Stages,
		configs: pipeline.New(kind(cfg.Client.KargoV1alpha1().RESTClient(), cfg.Journal), cfg.Log),
	}
}

// View is a ProjectConfig as clients see it, at one resource version.
type View = pipeline.ObjectView[*kargoapi.ProjectConfig]

// kind: by project. A project has at most one, so its order hardly
// matters; by name, as every Kargo kind here.
func kind(client cache.Getter, j journal.Config) pipeline.Kind[*kargoapi.ProjectConfig, *View] {
	return pipeline.ByNamespace(pipeline.Kind[*kargoapi.ProjectConfig, *View]{
		Name:      "ProjectConfig",
		ListWatch: cache.NewListWatchFromClient(client, kargoapi.ProjectConfigPlural, metav1.NamespaceAll, fields.Everything()),
		Example:   &kargoapi.ProjectConfig{},
		Compare:   func(a, b *kargoapi.ProjectConfig) int { return strings.Compare(a.Name, b.Name) },
		View:      pipeline.ObjectViews[kargoapi.ProjectConfig](kargoapi.GroupVersion.WithKind("ProjectConfig")),
		Same:      pipeline.SameObject[*kargoapi.ProjectConfig],
		Journal:   j,
	})
}

// Start starts the cache and returns once it is synced.
func (m *Manager) Start(ctx context.Context) error { return m.configs.Start(ctx) }

// Stop stops the cache.
func (m *Manager) Stop() { m.configs.Stop() }

// Cache is the ProjectConfig pipeline (metrics, readiness).
func (m *Manager) Cache() pipeline.Stats { return m.configs }

// Informer is the ProjectConfig informer: a change of a project's config
// is a reason for the Stage controller to look at its Stages again.
func (m *Manager) Informer() cache.SharedIndexInformer { return m.configs.Informer() }

// Cached returns a project's ProjectConfig from the cache as it is now,
// nil when it has none: the input of the Stage controller. Kargo reads
// only the one named after the project.
func (m *Manager) Cached(project string) (*kargoapi.ProjectConfig, error) {
	return m.configs.Get(project, project)
}
