// Package taskactions is the action manager: it owns every read and write
// of TaskAction objects and the event pipeline that feeds streams and the
// run service. It knows nothing of HTTP.
//
// One shared informer watches all TaskActions. Its handler runs on one
// goroutine and sees events in resource-version order; it publishes each
// event to the journal (which serves stream subscribers and their resumes,
// in that global order) and hands it to a pool of workers, sharded by an
// FNV hash of the object key so each object's events are handled in order.
// The workers notify the run service and mark terminal statuses recorded.
package taskactions

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"taskactions/internal/journal"
	"taskactions/internal/kube/clientset/versioned"
	flyteinformers "taskactions/internal/kube/informers/externalversions"
	"taskactions/internal/runs"
)

// RunNotifier is the run service as the manager sees it.
type RunNotifier interface {
	RecordAction(ctx context.Context, a runs.Action) error
	UpdateActionStatus(ctx context.Context, a runs.Action) error
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
	// Workers is the size of the worker pool (default 8); WorkerQueue the
	// bound of each worker's queue (default 1024).
	Workers     int
	WorkerQueue int
	// Notifier is the run service; nil disables notifications.
	Notifier RunNotifier
	Journal  journal.Config
	// Finalizers, when set, names the finalizers a new action of a task type
	// is created with (the executor's, for the types it claims), so the
	// executor need not add it with a write of its own.
	Finalizers func(taskType string) []string
	// HistoryLimit caps phase history (default 64 entries).
	HistoryLimit int
	Log          zerolog.Logger
	Now          func() time.Time
}

// Manager is safe for concurrent use after New.
type Manager struct {
	cfg     Config
	client  versioned.Interface
	journal *journal.Journal[*ActionUpdate]
	written rvWaiter // lets reads wait for this server's own writes
	lists   *listCache
	views   *viewCache
	owners  *namespaceOwners
	nsKnown sync.Map
	// noNamespaces: the API serves no Namespace objects (another server's
	// embedded control plane), so there are none to create.
	noNamespaces atomic.Bool

	published atomic.Int64 // events published to subscribers
	handled   atomic.Int64 // events the workers finished

	// Set by StartWatching, cleared by StopWatching.
	mu       sync.Mutex
	running  *watchState
	informer cache.SharedIndexInformer
}

// watchState is one StartWatching..StopWatching lifetime.
type watchState struct {
	ctx      context.Context
	cancel   context.CancelFunc
	factory  flyteinformers.SharedInformerFactory
	handler  cache.ResourceEventHandlerRegistration
	queues   []chan workItem
	workers  sync.WaitGroup
	synced   chan struct{}
	informer cache.SharedIndexInformer
}

// New returns a manager; StartWatching starts it.
func New(cfg Config) *Manager {
	if cfg.NamespaceTemplate == "" {
		cfg.NamespaceTemplate = "{project}-{domain}"
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.WorkerQueue <= 0 {
		cfg.WorkerQueue = 1024
	}
	if cfg.HistoryLimit <= 1 {
		cfg.HistoryLimit = 64
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Manager{
		cfg:     cfg,
		client:  cfg.Client,
		journal: journal.New[*ActionUpdate](cfg.Journal),
		lists:   newListCache(),
		views:   newViewCache(),
		owners:  newNamespaceOwners(),
	}
}

// Namespace returns the namespace of a project and domain.
func (m *Manager) Namespace(project, domain string) string {
	return strings.NewReplacer("{project}", project, "{domain}", domain).Replace(m.cfg.NamespaceTemplate)
}

// HasSynced reports whether the cache holds every TaskAction.
func (m *Manager) HasSynced() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running == nil {
		return false
	}
	select {
	case <-m.running.synced:
		return true
	default:
		return false
	}
}

// Synced is closed once the cache is synced (nil before StartWatching).
func (m *Manager) Synced() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running == nil {
		return nil
	}
	return m.running.synced
}

// QueueDepth is the number of events waiting for a worker.
func (m *Manager) QueueDepth() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running == nil {
		return 0
	}
	n := 0
	for _, q := range m.running.queues {
		n += len(q)
	}
	return n
}

// EventsPublished counts informer events published to subscribers.
func (m *Manager) EventsPublished() int64 { return m.published.Load() }

// EventsHandled counts informer events the workers have finished with.
func (m *Manager) EventsHandled() int64 { return m.handled.Load() }

// Informer is the shared TaskAction informer, for controllers that build
// on the manager's cache (the executor). Valid after StartWatching.
func (m *Manager) Informer() cache.SharedIndexInformer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.informer
}

// Journal exposes cursor formatting for the stream layer.
func (m *Manager) Journal() *journal.Journal[*ActionUpdate] { return m.journal }

// StartWatching starts the informer and the workers and returns once the
// cache is synced. The run service is told about every action not already
// marked terminal-recorded.
func (m *Manager) StartWatching(ctx context.Context) error {
	m.mu.Lock()
	if m.running != nil {
		m.mu.Unlock()
		return errors.New("already watching")
	}
	wctx, cancel := context.WithCancel(context.Background())
	w := &watchState{ctx: wctx, cancel: cancel, synced: make(chan struct{})}
	if err := m.setupInformer(w); err != nil {
		m.mu.Unlock()
		cancel()
		return err
	}
	m.running, m.informer = w, w.informer
	for i := range w.queues {
		w.workers.Add(1)
		go m.worker(w.ctx, w.queues[i], &w.workers)
	}
	m.mu.Unlock()

	w.factory.Start(wctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), w.handler.HasSynced) {
		m.StopWatching()
		return fmt.Errorf("wait for TaskAction cache: %w", context.Cause(ctx))
	}
	// Everything after the list's resource version will come through the
	// handler, in order: the journal covers resumes from there on.
	rv := parseRV(w.informer.LastSyncResourceVersion())
	m.journal.SetFloor(rv)
	m.written.advance(rv)
	close(w.synced)
	m.cfg.Log.Info().Uint64("resourceVersion", rv).Int("actions", len(w.informer.GetStore().ListKeys())).Msg("TaskAction cache synced")
	return nil
}

// StopWatching stops the informer and the workers and waits for them.
func (m *Manager) StopWatching() {
	m.mu.Lock()
	w := m.running
	m.running, m.informer = nil, nil
	m.mu.Unlock()
	if w == nil {
		return
	}
	_ = w.informer.RemoveEventHandler(w.handler)
	w.cancel()
	w.factory.Shutdown()
	for _, q := range w.queues {
		close(q)
	}
	w.workers.Wait()
	m.lists.forget()
	m.views.forget()
	m.owners.forget()
}

func shardOf(key string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

func keyOf(ns, name string) string { return ns + "/" + name }

// uidOf is a short alias used by the workers' maps.
type uid = types.UID
