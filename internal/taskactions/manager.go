// Package taskactions is the action store: every read and write of
// TaskAction objects, with their rules. It knows nothing of HTTP, and
// runs nothing of its own but its cache; the controllers that act on
// actions are packages of their own over the interfaces they declare:
// aborter (aborts carried down the tree), collector (the garbage
// collector of the embedded control plane), notifier (the run service
// told of each change, fed by Config.OnEvent) and retention (finished
// actions retired to history).
//
// TaskActions flow through the generic pipeline (package pipeline): one
// shared informer, the run and parent lists, each action's view encoded
// once, the journal that serves streams. What is TaskAction's own is here:
//   - identity, names and indexes (naming.go, informer.go), and
//     namespaces with the project and domain that own each
//     (namespaces.go, owners.go);
//   - reads: live from the cache (reads.go, lookup.go), then from history
//     for retired actions, paged (history.go, listcache.go), and
//     subscriptions to the streams (subscribe.go);
//   - writes and their rules: enqueue (enqueue.go), status reports
//     (status.go; the phase and reason rules are api/v1's phaseRules and
//     SetPhase), abort and delete cascades (abort.go, delete.go), size
//     limits and reserved names (limits.go, reserved.go), all through the
//     objects as the API server stores them (objects.go).
package taskactions

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/journal"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/pipeline"
	"taskactions/internal/runs"
)

// RunDeleter is the run service as deletes and aborts see it: history
// drops what is deleted at once, and refuses to record again the objects
// on their way out (their tombstones); an abort records the action
// ABORTED as soon as its object is deleted, so a read right after finds
// it so (the notifier records the same deletion again, a no-op).
type RunDeleter interface {
	DeleteRun(ctx context.Context, id v1.RunID, live []runs.Action) (bool, error)
	DeleteActions(ctx context.Context, id v1.RunID, name string, live []runs.Action) error
	UpdateActionStatus(ctx context.Context, a runs.Action) error
}

// Event is one change of an action, as the pipeline delivered it.
type Event = pipeline.Event[*v1.TaskAction, *ActionUpdate]

// Config holds the manager's dependencies and settings.
type Config struct {
	Client versioned.Interface
	// Stored, when set (the embedded control plane), reads every
	// TaskAction straight from etcd for the informer's lists: a start
	// then decodes each live object once, not three times through the API
	// server (see controlplane.Stored). Watches go through the API server.
	Stored Stored
	// Kube creates namespaces on an external cluster. Nil on the embedded
	// control plane, which has no Namespace objects.
	Kube kubernetes.Interface
	// NamespaceTemplate names an action's namespace from {project} and
	// {domain}. Default "{project}-{domain}".
	NamespaceTemplate string
	// Runs is the run service, which deletes update at once; nil: there
	// is none.
	Runs RunDeleter
	// OnEvent, when set, is given every event once the pipeline has
	// published it (package notifier's Observe). It is called on the
	// informer's goroutine, which feeds every stream: it must not block.
	OnEvent func(Event)
	// History holds the actions retired from the control plane, which
	// reads fall back to; nil: there is none (reads are live only).
	History *history.Store
	Journal journal.Config
	// Finalizers, when set, names the finalizers a new action of a task type
	// is created with (the executor's, for the types it claims), so the
	// executor need not add it with a write of its own.
	Finalizers func(taskType string) []string
	// BuiltIn reports whether this server's executor runs actions of a
	// task type (nil: none). Their attempts are the executor's: a status
	// report from outside cannot move them, and no log is appended to
	// them through the API.
	BuiltIn func(taskType string) bool
	// Pending, when set, says why a new action of a task type will wait:
	// no executor of this server runs the type (an executor outside may).
	// The reason goes on the action (AnnotationPendingReason) and shows
	// until its first status.
	Pending func(taskType string) string
	// HistoryLimit caps phase history (default 64 entries).
	HistoryLimit int
	// Tracer, when set (tracing is on), gives each enqueue a span and
	// stores its context on the new object (trace.go).
	Tracer trace.Tracer
	Log    zerolog.Logger
	Now    func() time.Time
}

// Manager is safe for concurrent use after New.
type Manager struct {
	cfg     Config
	actions *pipeline.Cache[*v1.TaskAction, *ActionUpdate]
	cached  lookup  // the informer cache's lookups
	objects objects // the objects as the API server stores them
	history archive // the actions retired to history
	ns      *namespaces

	mu       sync.Mutex // guards watching
	watching bool
}

// New returns a manager; StartWatching starts it.
func New(cfg Config) *Manager {
	if cfg.NamespaceTemplate == "" {
		cfg.NamespaceTemplate = "{project}-{domain}"
	}
	if cfg.HistoryLimit <= 1 {
		cfg.HistoryLimit = 64
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &Manager{cfg: cfg, history: archive{cfg.History},
		ns: newNamespaces(cfg.NamespaceTemplate, cfg.Kube, cfg.Log)}
	m.actions = pipeline.New(actionKind(cfg.Client, cfg.Stored, cfg.Journal, m.ns.owners, cfg.OnEvent), cfg.Log)
	m.cached = lookup{m.actions}
	m.objects = objects{client: cfg.Client, actions: m.actions, cached: m.cached, ns: m.ns, history: m.history}
	return m
}

// Namespace returns the namespace of a project and domain.
func (m *Manager) Namespace(project, domain string) string { return m.ns.of(project, domain) }

// NamespaceFor is the namespace a template (--namespace-template) gives a
// project and domain.
func NamespaceFor(template, project, domain string) string {
	return strings.NewReplacer("{project}", project, "{domain}", domain).Replace(template)
}

// Cache is the TaskAction pipeline: its informer, journal and views, and
// what is generic over kinds (metrics, readiness).
func (m *Manager) Cache() *pipeline.Cache[*v1.TaskAction, *ActionUpdate] { return m.actions }

// Informer is the shared TaskAction informer, for controllers that build
// on the manager's cache. Valid after StartWatching.
func (m *Manager) Informer() cache.SharedIndexInformer { return m.actions.Informer() }

// StartWatching starts the pipeline and returns once the cache is synced;
// OnEvent has then been given every action of the first list.
func (m *Manager) StartWatching(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watching {
		return errors.New("already watching")
	}
	if err := m.actions.Start(ctx); err != nil {
		return err
	}
	m.watching = true
	return nil
}

// StopWatching stops the pipeline and waits for it.
func (m *Manager) StopWatching() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.watching {
		return
	}
	m.actions.Stop()
	m.ns.owners.forget()
	m.watching = false
}

func keyOf(ns, name string) string { return ns + "/" + name }
