// Package warehouses serves Kargo Warehouses (kargo.akuity.io/v1alpha1)
// through the same pipeline as Stages and Freight: one informer, each
// project's Warehouses sorted by name, each view encoded once, a journal
// for resumable streams. What is Warehouse's own is here: Kargo's
// defaulting and validation on every write, optimistic concurrency, and
// refresh (the refresh annotation, as for Stages), and (controller.go)
// the Warehouse controller of the embedded control plane.
package warehouses

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
	// Stages says what a project is (its CheckProject), so that
	// Warehouses and Stages agree on it.
	Stages  *stages.Manager
	Journal journal.Config
	Log     zerolog.Logger
}

// Manager is safe for concurrent use after New.
type Manager struct {
	client     versioned.Interface
	stages     *stages.Manager
	warehouses *pipeline.Cache[*kargoapi.Warehouse, *View]
}

// New returns a stopped manager; Start starts it.
func New(cfg Config) *Manager {
	return &Manager{
		client: cfg.Client, stages: cfg.Stages,
		warehouses: pipeline.New(kind(cfg.Client.KargoV1alpha1().RESTClient(), cfg.Journal), cfg.Log),
	}
}

// View is a Warehouse as clients see it, at one resource version.
type View = pipeline.ObjectView[*kargoapi.Warehouse]

// kind: by project, each project's Warehouses sorted by name.
func kind(client cache.Getter, j journal.Config) pipeline.Kind[*kargoapi.Warehouse, *View] {
	return pipeline.ByNamespace(pipeline.Kind[*kargoapi.Warehouse, *View]{
		Name:      "Warehouse",
		ListWatch: cache.NewListWatchFromClient(client, kargoapi.WarehousePlural, metav1.NamespaceAll, fields.Everything()),
		Example:   &kargoapi.Warehouse{},
		Compare:   func(a, b *kargoapi.Warehouse) int { return strings.Compare(a.Name, b.Name) },
		View:      pipeline.ObjectViews[kargoapi.Warehouse](kargoapi.GroupVersion.WithKind("Warehouse")),
		Same:      pipeline.SameObject[*kargoapi.Warehouse],
		Journal:   j,
	})
}

// Start starts the cache and returns once it is synced.
func (m *Manager) Start(ctx context.Context) error { return m.warehouses.Start(ctx) }

// Stop stops the cache.
func (m *Manager) Stop() { m.warehouses.Stop() }

// Cache is the Warehouse pipeline (metrics, readiness, the controller).
func (m *Manager) Cache() *pipeline.Cache[*kargoapi.Warehouse, *View] { return m.warehouses }

// Journal exposes cursor formatting for Warehouse streams.
func (m *Manager) Journal() *journal.Journal[*View] { return m.warehouses.Journal() }

func writeError(project, name string, err error) error {
	return pipeline.FromAPIError("Warehouse", project, name, err)
}
