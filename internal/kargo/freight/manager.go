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
	"encoding/json"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/journal"
	"taskactions/internal/kargo/rules"
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

// List returns a project's Freight, newest first; with availableTo, only
// what is available to that Stage.
func (m *Manager) List(ctx context.Context, project, availableTo string) ([]*View, error) {
	all, err := m.freight.InNamespace(ctx, project)
	if err != nil || availableTo == "" {
		return all, err
	}
	st, err := m.stage(ctx, project, availableTo)
	if err != nil {
		return nil, err
	}
	var out []*View
	for _, v := range all {
		if st.IsFreightAvailable(v.Object) {
			out = append(out, v)
		}
	}
	return out, nil
}

// Get returns one piece of Freight, by name or, failing that, by alias
// (Kargo's API takes either).
func (m *Manager) Get(ctx context.Context, project, nameOrAlias string) (*View, error) {
	f, err := m.Named(ctx, project, nameOrAlias, "")
	if err != nil {
		return nil, err
	}
	return m.freight.View(f), nil
}

// Named finds Freight by name (falling back to the alias when no Freight
// has that name), or by alias when name is empty, in the cache once this
// server's own writes have reached it.
func (m *Manager) Named(ctx context.Context, project, name, alias string) (*kargoapi.Freight, error) {
	m.freight.CatchUp(ctx)
	if name != "" {
		if f, err := m.freight.Get(project, name); err != nil || f != nil {
			return f, err
		}
		alias = name
	}
	fs, err := m.freight.ByIndex(indexAlias, project+"/"+alias)
	if err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		if name != "" {
			return nil, pipeline.Errorf(pipeline.ErrNotFound, "%s", rules.MsgFreightNotFound(name, project))
		}
		return nil, pipeline.Errorf(pipeline.ErrNotFound, "%s", rules.MsgFreightAliasNotFound(alias, project))
	}
	return fs[0], nil
}

// Create stores Freight as a Warehouse would have discovered it: its
// name is the hash of its artifacts (Kargo's), its alias the given one or
// a generated one.
func (m *Manager) Create(ctx context.Context, project string, f *kargoapi.Freight) (*View, error) {
	if f.Namespace != "" && f.Namespace != project {
		return nil, pipeline.FieldErrors{{Path: []string{"metadata", "namespace"},
			Detail: fmt.Sprintf("Invalid value: %q: must be the project %q (or left out)", f.Namespace, project)}}
	}
	f.Namespace, f.ResourceVersion, f.Status = project, "", kargoapi.FreightStatus{}
	if err := pipeline.FromFieldErrors(rules.ValidateFreight(f)); err != nil {
		return nil, err
	}
	if err := rules.DefaultFreight(f, true, m.newAlias(project)); err != nil {
		return nil, err
	}
	out, err := m.client.KargoV1alpha1().Freights(project).Create(ctx, f, metav1.CreateOptions{})
	if err != nil {
		return nil, writeError(project, f.Name, err)
	}
	m.freight.Wrote(out)
	return m.freight.View(out), nil
}

// newAlias makes an alias no Freight of the project has: Kargo picks an
// adjective-animal pair; a short counter-based name serves here.
func (m *Manager) newAlias(project string) func() (string, error) {
	return func() (string, error) {
		inProject, _ := m.freight.ByIndex(pipeline.IndexNamespace, project)
		for i := len(inProject) + 1; ; i++ {
			alias := fmt.Sprintf("freight-%d", i)
			if fs, _ := m.freight.ByIndex(indexAlias, project+"/"+alias); len(fs) == 0 {
				return alias, nil
			}
		}
	}
}

// Approve makes Freight available to a Stage whatever its verification
// or soak (Kargo's manual approval); approving again is a no-op.
func (m *Manager) Approve(ctx context.Context, project, nameOrAlias, stage string) (*View, error) {
	f, err := m.Named(ctx, project, nameOrAlias, "")
	if err != nil {
		return nil, err
	}
	if _, err := m.stage(ctx, project, stage); err != nil {
		return nil, err
	}
	if f.IsApprovedFor(stage) {
		return m.freight.View(f), nil
	}
	// A merge patch of the status: it adds one key, so it cannot conflict
	// with the Stage controller's writes to the same status.
	approved := kargoapi.ApprovedStage{ApprovedAt: &metav1.Time{Time: m.now()}}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"approvedFor": map[string]any{stage: approved}}})
	out, err := m.client.KargoV1alpha1().Freights(project).Patch(ctx, f.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return nil, writeError(project, f.Name, err)
	}
	m.freight.Wrote(out)
	return m.freight.View(out), nil
}

// Sync brings the Freight of a Stage's project in line with the Stage's
// status, as Kargo's Stage controller does: the Freight of its current
// collection is currentlyIn the Stage (since now, if it was not), Freight
// that left it is not (its soak is kept as the longest completed one),
// and the Freight the Stage has verified is verifiedIn it.
func (m *Manager) Sync(ctx context.Context, s *kargoapi.Stage, now time.Time) error {
	current := map[string]bool{}
	if cur := s.Status.FreightHistory.Current(); cur != nil {
		for _, ref := range cur.References() {
			current[ref.Name] = true
		}
	}
	verified := map[string]bool{}
	for _, name := range rules.VerifiedFreight(s) {
		verified[name] = true
	}
	all, err := m.freight.ByIndex(pipeline.IndexNamespace, s.Namespace)
	if err != nil {
		return err
	}
	for _, f := range all {
		next := f.DeepCopy()
		switch _, in := f.Status.CurrentlyIn[s.Name]; {
		case current[f.Name] && !in:
			next.Status.AddCurrentStage(s.Name, now)
		case !current[f.Name] && in:
			next.Status.RemoveCurrentStage(s.Name)
		}
		if verified[f.Name] {
			next.Status.AddVerifiedStage(s.Name, now)
		}
		if equality.Semantic.DeepEqual(f.Status, next.Status) {
			continue
		}
		out, err := m.client.KargoV1alpha1().Freights(s.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return writeError(s.Namespace, f.Name, err)
		}
		m.freight.Wrote(out)
	}
	return nil
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
