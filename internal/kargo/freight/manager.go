// Package freight serves Kargo Freight (kargo.akuity.io/v1alpha1) through
// the same pipeline as TaskActions and Stages: one informer, each project's
// Freight newest first, an index on the alias. What is Freight's own is
// here: lookups by name or alias, creation with Kargo's ID and an alias,
// manual approval for a Stage, and keeping the Freight's status in line
// with the Stages it is in (Sync, which the Stage controller calls).
package freight

import (
	"cmp"
	"context"
	"time"

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
	// Stages answers which Stages exist, for approvals and for Freight
	// available to a Stage.
	Stages  *stages.Manager
	Journal journal.Config
	Log     zerolog.Logger
	Now     func() time.Time
}

// Manager is safe for concurrent use after New.
type Manager struct {
	client  versioned.Interface
	stages  *stages.Manager
	freight *pipeline.Cache[*kargoapi.Freight, *View]
	now     func() time.Time
}

// New returns a stopped manager; Start starts it.
func New(cfg Config) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Manager{
		client: cfg.Client, stages: cfg.Stages, now: cfg.Now,
		freight: pipeline.New(kind(cfg.Client.KargoV1alpha1().RESTClient(), cfg.Journal), cfg.Log),
	}
}

// View is a piece of Freight as clients see it.
type View = pipeline.ObjectView[*kargoapi.Freight]

const indexAlias = "alias"

// kind: by project, newest first (Kargo's Freight timeline), with an
// index on the alias.
func kind(client cache.Getter, j journal.Config) pipeline.Kind[*kargoapi.Freight, *View] {
	return pipeline.ByNamespace(pipeline.Kind[*kargoapi.Freight, *View]{
		Name:      "Freight",
		ListWatch: cache.NewListWatchFromClient(client, "freights", metav1.NamespaceAll, fields.Everything()),
		Example:   &kargoapi.Freight{},
		Indexers: cache.Indexers{indexAlias: func(obj any) ([]string, error) {
			f := obj.(*kargoapi.Freight)
			return []string{f.Namespace + "/" + f.Alias}, nil
		}},
		Compare: func(a, b *kargoapi.Freight) int {
			return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
		},
		View:    pipeline.ObjectViews[kargoapi.Freight](kargoapi.GroupVersion.WithKind("Freight")),
		Same:    pipeline.SameObject[*kargoapi.Freight],
		Journal: j,
	})
}

// Start starts the cache and returns once it is synced.
func (m *Manager) Start(ctx context.Context) error { return m.freight.Start(ctx) }

// Stop stops the cache.
func (m *Manager) Stop() { m.freight.Stop() }

// Cache is the Freight pipeline (metrics, readiness).
func (m *Manager) Cache() pipeline.Stats { return m.freight }

// Journal exposes cursor formatting for Freight streams.
func (m *Manager) Journal() *journal.Journal[*View] { return m.freight.Journal() }

// FreightInformer is the Freight informer: new Freight is a reason for
// the Stage controller to auto-promote.
func (m *Manager) FreightInformer() cache.SharedIndexInformer { return m.freight.Informer() }

// InProject returns a project's cached Freight as it is now, unsorted:
// the input of the Stage controller.
func (m *Manager) InProject(project string) ([]*kargoapi.Freight, error) {
	return m.freight.ByIndex(pipeline.IndexNamespace, project)
}

// stage reads a Stage through the Stage manager (its project checked).
func (m *Manager) stage(ctx context.Context, project, name string) (*kargoapi.Stage, error) {
	u, err := m.stages.Get(ctx, project, name)
	if err != nil {
		return nil, err
	}
	return u.Object, nil
}

func writeError(project, name string, err error) error {
	return pipeline.FromAPIError("Freight", project, name, err)
}
