// Package promotions serves Kargo Promotions (kargo.akuity.io/v1alpha1)
// through the same pipeline as TaskActions, Stages and Freight: one
// informer, lists by project and by Stage, a stream per Stage. What is
// Promotion's own is here: Promote and PromoteDownstream (built as Kargo's
// builder builds them, once the Freight is available), Abort, and the
// names of the run of TaskActions a Promotion runs as (run.go). Package
// orchestrator runs them; the status it writes goes through WriteStatus.
package promotions

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/journal"
	"taskactions/internal/kargo/freight"
	"taskactions/internal/kargo/stages"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/pipeline"
)

// rest is what a ListWatch needs of a client.
type rest = cache.Getter

// Config holds the manager's dependencies.
type Config struct {
	Client  versioned.Interface
	Stages  *stages.Manager
	Freight *freight.Manager
	Journal journal.Config
	Log     zerolog.Logger
	Now     func() time.Time
}

// Manager is safe for concurrent use after New.
type Manager struct {
	cfg        Config
	client     versioned.Interface
	stages     *stages.Manager
	freight    *freight.Manager
	promotions *pipeline.Cache[*kargoapi.Promotion, *View]
	now        func() time.Time
}

// New returns a stopped manager; Start starts it.
func New(cfg Config) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	rc := cfg.Client.KargoV1alpha1().RESTClient()
	return &Manager{
		cfg: cfg, client: cfg.Client, stages: cfg.Stages, freight: cfg.Freight, now: cfg.Now,
		promotions: pipeline.New(promotionKind(rc, cfg.Journal), cfg.Log),
	}
}

// View is a Promotion as clients see it.
type View = pipeline.ObjectView[*kargoapi.Promotion]

const (
	indexStage = "stage" // namespace/spec.stage
	indexRun   = "run"   // namespace/the run's name
)

// promotionKind: by project, and by Stage, each list in Kargo's queue
// order's tie-break (names hold a ULID: oldest first); the Stage's
// promotions stream as a topic of their own.
func promotionKind(client rest, j journal.Config) pipeline.Kind[*kargoapi.Promotion, *View] {
	return pipeline.ByNamespace(pipeline.Kind[*kargoapi.Promotion, *View]{
		Name:      "Promotion",
		ListWatch: cache.NewListWatchFromClient(client, "promotions", metav1.NamespaceAll, fields.Everything()),
		Example:   &kargoapi.Promotion{},
		Indexers: cache.Indexers{
			indexStage: func(obj any) ([]string, error) {
				p := obj.(*kargoapi.Promotion)
				return []string{p.Namespace + "/" + p.Spec.Stage}, nil
			},
			indexRun: func(obj any) ([]string, error) {
				p := obj.(*kargoapi.Promotion)
				return []string{p.Namespace + "/" + runName(p.Name)}, nil
			},
		},
		Lists: func(p *kargoapi.Promotion) []string {
			return []string{pipeline.ListKey(indexStage, p.Namespace+"/"+p.Spec.Stage)}
		},
		Compare: func(a, b *kargoapi.Promotion) int { return strings.Compare(a.Name, b.Name) },
		View:    pipeline.ObjectViews[kargoapi.Promotion](kargoapi.GroupVersion.WithKind("Promotion")),
		Same:    pipeline.SameObject[*kargoapi.Promotion],
		Topics: func(p *kargoapi.Promotion, _ *View) []string {
			return []string{stageTopic(p.Namespace, p.Spec.Stage)}
		},
		Journal: j,
	})
}

func stageTopic(project, stage string) string { return "promotions-of/" + project + "/" + stage }

// Start starts the cache and returns once it is synced.
func (m *Manager) Start(ctx context.Context) error { return m.promotions.Start(ctx) }

// Stop stops the cache.
func (m *Manager) Stop() { m.promotions.Stop() }

// Cache is the Promotion pipeline (metrics, readiness).
func (m *Manager) Cache() pipeline.Stats { return m.promotions }

// Journal exposes cursor formatting for Promotion streams.
func (m *Manager) Journal() *journal.Journal[*View] { return m.promotions.Journal() }

// List returns a project's Promotions, or (stage set) a Stage's, oldest
// first.
func (m *Manager) List(ctx context.Context, project, stage string) ([]*View, error) {
	if stage == "" {
		return m.promotions.InNamespace(ctx, project)
	}
	m.promotions.CatchUp(ctx)
	ps, err := m.promotions.List(indexStage, project+"/"+stage)
	if err != nil {
		return nil, err
	}
	return m.promotions.Views(ps), nil
}

// Get returns one Promotion.
func (m *Manager) Get(ctx context.Context, project, name string) (*View, error) {
	v, ok, err := m.promotions.Named(ctx, project, name)
	if err == nil && !ok {
		err = pipeline.Errorf(pipeline.ErrNotFound, "Promotion %q not found in project %q", name, project)
	}
	return v, err
}

// PromotionInformer is the Promotion informer, for the controllers.
func (m *Manager) PromotionInformer() cache.SharedIndexInformer { return m.promotions.Informer() }

// Cached returns a Promotion from the cache as it is now, nil when there
// is none: the input of controllers, which an event brings back.
func (m *Manager) Cached(project, name string) (*kargoapi.Promotion, error) {
	return m.promotions.Get(project, name)
}

// OfRun returns the Promotion whose run (RunOf) is run in project, if any.
func (m *Manager) OfRun(project, run string) *kargoapi.Promotion {
	ps, _ := m.promotions.ByIndex(indexRun, project+"/"+run)
	if len(ps) == 0 {
		return nil
	}
	return ps[0]
}

// WriteStatus writes a Promotion's status (the orchestrator's), from the
// resource version p names.
func (m *Manager) WriteStatus(ctx context.Context, p *kargoapi.Promotion) (*kargoapi.Promotion, error) {
	out, err := m.client.KargoV1alpha1().Promotions(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		return nil, writeError("Promotion", p.Namespace, p.Name, err)
	}
	m.promotions.Wrote(out)
	return out, nil
}

// SetStart records that p's steps run in start n (StartAnnotation), from
// the resource version p names: a conflict is pipeline's ErrConflict.
func (m *Manager) SetStart(ctx context.Context, p *kargoapi.Promotion, n int) (*kargoapi.Promotion, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": p.ResourceVersion,
		"annotations":     map[string]string{StartAnnotation: strconv.Itoa(n)},
	}})
	if err != nil {
		return nil, err
	}
	out, err := m.client.KargoV1alpha1().Promotions(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, writeError("Promotion", p.Namespace, p.Name, err)
	}
	m.promotions.Wrote(out)
	return out, nil
}

// Stored reads a Promotion from the API server, not the cache; nil when
// there is none. The cache may not have heard of a Promotion yet, so a
// controller that would act on one being gone asks the store.
func (m *Manager) Stored(ctx context.Context, project, name string) (*kargoapi.Promotion, error) {
	p, err := m.client.KargoV1alpha1().Promotions(project).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		err = pipeline.FromAPIError("Promotion", project, name, err)
		if errors.Is(err, pipeline.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return p, nil
}

// ForStage returns the cached Promotions of a Stage, unsorted: the input
// of controllers. It reads the informer's index, not the sorted list that
// the pipeline's own handler patches: a controller woken by an event may
// run before that handler has.
func (m *Manager) ForStage(project, stage string) []*kargoapi.Promotion {
	ps, _ := m.promotions.ByIndex(indexStage, project+"/"+stage)
	return ps
}

// CatchUp waits (briefly) until the cache has the Promotions this server
// wrote: the Stage controller must not create one it cannot see yet.
func (m *Manager) CatchUp(ctx context.Context) { m.promotions.CatchUp(ctx) }

// Subscription delivers Promotion views.
type Subscription = journal.Subscription[*View]

// Start says how a subscription begins.
type Start = journal.Start[*View]

// Subscribe opens a subscription to a project's Promotions, or (stage
// set) to a Stage's.
func (m *Manager) Subscribe(ctx context.Context, project, stage string, after *uint64) (*journal.Subscription[*View], journal.Start[*View], []*View) {
	if stage == "" {
		return m.promotions.SubscribeNamespace(ctx, project, "", after)
	}
	return m.promotions.Subscribe(ctx, stageTopic(project, stage), after, func() []*kargoapi.Promotion {
		ps, _ := m.promotions.List(indexStage, project+"/"+stage)
		return ps
	})
}

func writeError(kind, project, name string, err error) error {
	return pipeline.FromAPIError(kind, project, name, err)
}
