// Package taskactions is the action manager: it owns every read and write
// of TaskAction objects, and the controllers that keep them. It knows
// nothing of HTTP.
//
// TaskActions flow through the generic pipeline (package pipeline): one
// shared informer, the run and parent lists, each action's view encoded
// once, the journal that serves streams. What is TaskAction's own is here:
//   - identity, names and indexes (naming.go, informer.go), namespaces and
//     the project and domain that own each (owners.go);
//   - reads, live from the cache and then from history for retired actions,
//     paged (reads.go, history.go, listcache.go), and subscriptions to the
//     streams (subscribe.go);
//   - writes and their rules: enqueue (enqueue.go), status reports
//     (status.go; the phase and reason rules are api/v1's phaseRules and
//     SetPhase), abort and delete cascades (abort.go, delete.go), size
//     limits and reserved names (limits.go, reserved.go);
//   - the workers the pipeline hands each event to through a workqueue
//     (workers.go), which notify the run service and mark terminal
//     statuses recorded, and retention, which deletes finished actions
//     once history holds them (retention.go).
//
// The controllers that act on actions only through the manager are
// packages of their own, over the interfaces they declare: aborter
// (aborts carried down the tree) and collector (the garbage collector of
// the embedded control plane).
package taskactions

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/journal"
	"taskactions/internal/kube/clientset/versioned"
	"taskactions/internal/pipeline"
	"taskactions/internal/runs"
)

// RunNotifier is the run service as the manager sees it.
type RunNotifier interface {
	RecordAction(ctx context.Context, a runs.Action) error
	UpdateActionStatus(ctx context.Context, a runs.Action) error
	DeleteRun(ctx context.Context, id v1.RunID, live []runs.Action) (bool, error)
	DeleteActions(ctx context.Context, id v1.RunID, name string, live []runs.Action) error
}

// Config holds the manager's dependencies and settings.
type Config struct {
	Client versioned.Interface
	// Kube creates namespaces on an external cluster. Nil on the embedded
	// control plane, which has no Namespace objects.
	Kube kubernetes.Interface
	// NamespaceTemplate names an action's namespace from {project} and
	// {domain}. Default "{project}-{domain}".
	NamespaceTemplate string
	// Workers is the number of run-service notifications in flight
	// (default 8).
	Workers int
	// Notifier is the run service; nil disables notifications.
	Notifier RunNotifier
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
	// Warm, when set, is given each changed action's latest update by a
	// worker, off the informer's goroutine: the API passes its encoder, so
	// that the first list of a big run copies encodings instead of making
	// them (10,000 take some 55 ms). Actions a restart finds finished are
	// not warmed: their encodings would cost memory for reads that may
	// never come.
	Warm func(*ActionUpdate)
	// HistoryLimit caps phase history (default 64 entries).
	HistoryLimit int
	Log          zerolog.Logger
	Now          func() time.Time
}

// Manager is safe for concurrent use after New.
type Manager struct {
	cfg     Config
	client  versioned.Interface
	actions *pipeline.Cache[*v1.TaskAction, *ActionUpdate]
	owners  *namespaceOwners
	nsKnown sync.Map
	// noNamespaces: the API serves no Namespace objects (another server's
	// embedded control plane), so there are none to create.
	noNamespaces atomic.Bool

	handled atomic.Int64 // events the workers finished

	// The workers of one StartWatching..StopWatching lifetime.
	mu      sync.Mutex
	running atomic.Pointer[workers]
}

// New returns a manager; StartWatching starts it.
func New(cfg Config) *Manager {
	if cfg.NamespaceTemplate == "" {
		cfg.NamespaceTemplate = "{project}-{domain}"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.HistoryLimit <= 1 {
		cfg.HistoryLimit = 64
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &Manager{cfg: cfg, client: cfg.Client, owners: newNamespaceOwners()}
	m.actions = pipeline.New(m.kind(), cfg.Log)
	return m
}

// Namespace returns the namespace of a project and domain.
func (m *Manager) Namespace(project, domain string) string {
	return NamespaceFor(m.cfg.NamespaceTemplate, project, domain)
}

// NamespaceFor is the namespace a template (--namespace-template) gives a
// project and domain.
func NamespaceFor(template, project, domain string) string {
	return strings.NewReplacer("{project}", project, "{domain}", domain).Replace(template)
}

// HasSynced reports whether the cache holds every TaskAction.
func (m *Manager) HasSynced() bool { return m.actions.HasSynced() }

// Cache is the TaskAction pipeline, for what is generic over kinds
// (metrics, readiness).
func (m *Manager) Cache() *pipeline.Cache[*v1.TaskAction, *ActionUpdate] { return m.actions }

// QueueDepth is the number of events waiting for a worker.
func (m *Manager) QueueDepth() int {
	w := m.running.Load()
	if w == nil {
		return 0
	}
	return w.depth()
}

// EventsHandled counts informer events the workers have finished with.
func (m *Manager) EventsHandled() int64 { return m.handled.Load() }

// Informer is the shared TaskAction informer, for controllers that build
// on the manager's cache (the executor). Valid after StartWatching.
func (m *Manager) Informer() cache.SharedIndexInformer { return m.actions.Informer() }

// Journal exposes cursor formatting for the stream layer.
func (m *Manager) Journal() *journal.Journal[*ActionUpdate] { return m.actions.Journal() }

// StartWatching starts the workers and the pipeline and returns once the
// cache is synced. The run service is told about every action not already
// marked terminal-recorded.
func (m *Manager) StartWatching(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running.Load() != nil {
		return errors.New("already watching")
	}
	w := m.startWorkers()
	if err := m.actions.Start(ctx); err != nil {
		m.stopWorkers(w)
		return err
	}
	return nil
}

// StopWatching stops the pipeline and the workers and waits for them.
func (m *Manager) StopWatching() {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.running.Load()
	if w == nil {
		return
	}
	m.actions.Stop()
	m.stopWorkers(w)
	m.owners.forget()
}

func keyOf(ns, name string) string { return ns + "/" + name }
