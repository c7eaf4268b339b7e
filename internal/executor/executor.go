// Package executor is the controller that drives TaskActions through their
// lifecycle and owns every field of their status: a client-go workqueue
// over the action manager's informer, handing each claimed action to the
// plugin of its task type, round after round, until it is terminal.
//
// Only one executor may act on an action. On the embedded control plane
// the data-dir lock makes this process the only one; on a cluster,
// RunWithLeaderElection takes a Lease first.
package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/pipeline"
	"taskactions/internal/taskactions"
)

// Actions is what the executor needs of the action manager: its cache to
// work from, and status and metadata writes with the manager's rules
// (phases are set with v1.SetPhase).
type Actions interface {
	Informer() cache.SharedIndexInformer
	ByCacheKey(project, domain, key string) ([]*v1.TaskAction, error)
	UpdateStatus(ctx context.Context, id taskactions.ActionID, mutate func(*v1.TaskAction) error) (*v1.TaskAction, error)
	UpdateMeta(ctx context.Context, id taskactions.ActionID, mutate func(*v1.TaskAction) error) (*v1.TaskAction, error)
}

// setPhase moves an action to a phase now (v1.SetPhase); force adds a
// history entry for a new attempt in the same phase.
func setPhase(ta *v1.TaskAction, p v1.Phase, reason, message string, force bool) {
	v1.SetPhase(ta, v1.PhaseChange{Phase: p, Reason: reason, Message: message, NewAttempt: force, At: time.Now()})
}

// Config holds the executor's dependencies and settings.
type Config struct {
	Manager Actions
	// TaskTypes is what the executor claims: "*" every type, "" none (the
	// executor is off), or a comma-separated list. Unclaimed actions are
	// left to an executor outside, reporting through PUT .../status.
	TaskTypes string
	// NoOutside says that no executor outside this server exists: the
	// executor then also takes this server's actions of the types it does
	// not claim, and fails them at once (PluginNotFound, naming the types
	// it runs), as Flyte's executor fails a type it has no plugin for,
	// rather than leave them queued for nobody.
	NoOutside bool
	// Reported are task types whose actions this server's own
	// controllers report (a Promotion's or an AnalysisRun's root action):
	// the executor never takes them, NoOutside or not.
	Reported []string
	Plugins  map[string]plugins.Plugin
	// Admit, when set, is asked before each round whether it may run now
	// (admit.go).
	Admit Admit
	// Workers is how many actions are reconciled at once (default 8).
	Workers int
	// MaxSystemFailures: past this many, an action fails for good (default 5).
	MaxSystemFailures int
	// OutputRoot holds each action's output dir:
	// <OutputRoot>/<project>/<domain>/<run>/<action>.
	OutputRoot string
	// ServerURL is given to tasks, so they can call the API, and TaskToken
	// makes the token an attempt calls it with, given the action and the
	// attempt's timeout (nil: none, authentication is off).
	ServerURL string
	TaskToken func(ta *v1.TaskAction, timeout time.Duration) string
	// Resync re-examines every claimed action this often, as a safety net
	// for a missed wake-up (default 5m).
	Resync  time.Duration
	Metrics prometheus.Registerer
	// Tracer, when set (tracing is on), gives each attempt a span under
	// its action's context (trace.go).
	Tracer trace.Tracer
	Log    zerolog.Logger
}

// TaskTypes is a parsed --executor-task-types.
type TaskTypes struct {
	all   bool
	types map[string]bool
}

// ParseTaskTypes reads "*" (every type), "" (none) or a comma list.
func ParseTaskTypes(s string) TaskTypes {
	tt := TaskTypes{types: map[string]bool{}}
	for _, t := range strings.Split(s, ",") {
		switch t = strings.TrimSpace(t); t {
		case "":
		case "*":
			tt.all = true
		default:
			tt.types[t] = true
		}
	}
	return tt
}

// Claims reports whether actions of the task type are the executor's.
func (tt TaskTypes) Claims(taskType string) bool { return tt.all || tt.types[taskType] }

// Any reports whether any type is claimed.
func (tt TaskTypes) Any() bool { return tt.all || len(tt.types) > 0 }

// Controller is the executor. Run it once.
type Controller struct {
	cfg     Config
	mgr     Actions
	queue   atomic.Pointer[workqueue.TypedRateLimitingInterface[string]]
	run     atomic.Pointer[running] // the Run going on, for Drained
	types   TaskTypes
	metrics *metrics

	mu      sync.Mutex
	written map[string]uint64         // key -> resource version of our last write
	held    map[string]*v1.TaskAction // key -> its last read while its attempt may hold something (release.go)
	started sync.Map                  // action UID/attempt -> when this process started it

	spanMu sync.Mutex
	spans  map[string]*attemptSpan // key -> the span of its attempt in flight (trace.go)

	rounds rounds // in progress, for an abort to end (rounds.go)
}

// New returns an executor; Enabled tells whether it claims anything.
func New(cfg Config) *Controller {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.MaxSystemFailures <= 0 {
		cfg.MaxSystemFailures = 5
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 5 * time.Minute
	}
	types := ParseTaskTypes(cfg.TaskTypes)
	if types.all { // every type it has a plugin for
		for name := range cfg.Plugins {
			types.types[name] = true
		}
		types.all = false
	}
	c := &Controller{
		cfg: cfg, mgr: cfg.Manager, types: types, written: map[string]uint64{}, held: map[string]*v1.TaskAction{},
		metrics: newMetrics(cfg.Metrics),
	}
	return c
}

// Enabled reports whether the executor claims any task type.
func (c *Controller) Enabled() bool { return c.types.Any() }

// running is the handler and queue of a Run going on.
type running struct {
	handler cache.ResourceEventHandlerRegistration
	queue   workqueue.TypedRateLimitingInterface[string]
}

// Drained reports whether the executor has been through the actions the
// cache held when it started: its handler has had them all and none waits
// in its queue (the last rounds may still be going on). False when it is
// not running.
func (c *Controller) Drained() bool {
	p := c.run.Load()
	return p != nil && p.handler.HasSynced() && p.queue.Len() == 0
}

func (c *Controller) claims(obj any) bool {
	ta, ok := pipeline.Deleted[*v1.TaskAction](obj)
	return ok && c.owns(ta)
}

// owns reports whether an action is this executor's to run. Two executors
// must never work on one action, so it takes only a task (a condition
// runs nothing) of a type it claims ("*": every type it has a plugin for;
// with NoOutside every type, those it cannot run to fail them),
// whose template it can read (JSON, as this server writes it; Flyte's is
// a serialized protobuf, for Flyte's executor), and that carries no
// finalizer of another executor.
func (c *Controller) owns(ta *v1.TaskAction) bool {
	s := &ta.Spec
	switch {
	case s.ActionType == v1.ActionTypeCondition, slices.Contains(c.cfg.Reported, s.TaskType):
		return false
	case !c.types.Claims(s.TaskType) && !c.cfg.NoOutside:
		return false
	case len(s.TaskTemplate) > 0 && !json.Valid(s.TaskTemplate):
		return false
	}
	for _, f := range ta.Finalizers {
		if f != v1.FinalizerPlugin {
			return false
		}
	}
	return true
}

// Run reconciles until ctx ends, then stops its workers and every plugin
// that keeps something running (process groups are killed). It may run
// again after it returned (a replica that regains leadership), never twice
// at once.
func (c *Controller) Run(ctx context.Context) error {
	// The queue holds each action key once: it is bounded by the actions.
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "executor", MetricsProvider: queueMetrics{c.metrics}})
	c.metrics.depth.Set(0) // a queue of an earlier Run, shut down, counts no more
	c.queue.Store(&q)
	c.mu.Lock()
	clear(c.held) // an earlier Run's stop ended all it held
	c.mu.Unlock()
	inf := c.mgr.Informer()
	reg, err := inf.AddEventHandlerWithResyncPeriod(cache.FilteringResourceEventHandler{
		FilterFunc: c.claims,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueue,
			UpdateFunc: func(_, obj any) { c.enqueue(obj) },
			DeleteFunc: c.enqueue,
		},
	}, c.cfg.Resync)
	if err != nil {
		return err
	}
	c.run.Store(&running{handler: reg, queue: q})
	defer c.run.Store(nil)
	c.cfg.Log.Info().Str("taskTypes", c.cfg.TaskTypes).Int("workers", c.cfg.Workers).Msg("executor started")
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	if err := inf.RemoveEventHandler(reg); err != nil {
		// Only a registration of another informer fails: a bug, and the
		// handler then keeps waking a queue that is shut down (harmless).
		c.cfg.Log.Error().Err(err).Msg("executor: could not remove its informer handler")
	}
	q.ShutDown()
	wg.Wait()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, p := range c.cfg.Plugins {
		if s, ok := p.(plugins.Stopper); ok {
			c.interrupted(stopCtx, s.Shutdown(stopCtx))
		}
	}
	c.endAttemptSpans()
	c.cfg.Log.Info().Msg("executor stopped")
	return nil
}

// interrupted records the attempts a stop cut short: queued again under
// the same number, with no plugin state, and no failure counted, since
// neither the task nor the system failed. The next executor starts them
// over. (A crash records nothing; the next executor finds the state of a
// process it did not start and counts a system failure.)
func (c *Controller) interrupted(ctx context.Context, cut []plugins.Interrupted) {
	for _, it := range cut {
		id := taskactions.ActionID{Project: it.Project, Domain: it.Domain, Run: it.Run, Name: it.Action}
		_, err := c.mgr.UpdateStatus(ctx, id, func(t *v1.TaskAction) error {
			if v1.PhaseOf(t.Status.Conditions).Terminal() || t.Status.Attempts != it.Attempt {
				return taskactions.ErrNoChange
			}
			t.Status.PluginState, t.Status.PluginStateVersion, t.Status.PluginPhase = nil, 0, ""
			setPhase(t, v1.PhaseQueued, v1.ReasonQueued,
				fmt.Sprintf("attempt %d was interrupted by a server stop; it starts again", it.Attempt), true)
			return nil
		})
		if err != nil {
			c.cfg.Log.Warn().Err(err).Str("action", id.String()).Msg("could not record an interrupted attempt; the next start counts it lost")
			continue
		}
		c.cfg.Log.Info().Str("action", id.String()).Uint32("attempt", it.Attempt).Msg("attempt interrupted by the stop")
	}
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err == nil {
		c.rounds.seen(key, obj)
		c.wake(key)
	}
}

// wake queues a key for a round now; plugins call it when something
// happened (a process exited).
func (c *Controller) wake(key string) {
	if q := c.queue.Load(); q != nil {
		(*q).Add(key)
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	queue := *c.queue.Load()
	key, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(key)
	start := time.Now()
	after, err := c.reconcile(ctx, key)
	c.metrics.latency.Observe(time.Since(start).Seconds())
	switch {
	case errors.Is(err, taskactions.ErrTooLarge):
		// Not even a failure fits: retrying would only fail again.
		c.cfg.Log.Error().Err(err).Str("action", key).Msg("the action is too large to record any status in; delete it")
		queue.Forget(key)
	case err != nil && ctx.Err() == nil:
		c.cfg.Log.Warn().Err(err).Str("action", key).Msg("reconcile failed; retrying")
		queue.AddRateLimited(key)
	case after > 0:
		queue.Forget(key)
		queue.AddAfter(key, after)
	default:
		queue.Forget(key)
	}
	return true
}

// expect records the version of our own write: until the cache has it, a
// round would act on a state we already moved past.
func (c *Controller) expect(key string, ta *v1.TaskAction) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written[key] = rv(ta)
}

func (c *Controller) stale(key string, ta *v1.TaskAction) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return rv(ta) < c.written[key]
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.written, key)
}

// attemptOver drops what this process remembers of a finished attempt.
func (c *Controller) attemptOver(ta *v1.TaskAction) {
	c.started.Delete(attemptKey(ta))
	c.unhold(ta)
}
