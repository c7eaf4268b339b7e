// Package runner runs Argo Rollouts AnalysisRuns where Rollouts does not
// (the embedded control plane, a cluster without it), each as a run of
// TaskActions: the root action is the AnalysisRun, and each measurement a
// child action, taken by the executor (package measure for web and
// Prometheus metrics, the process plugin for job metrics). What is due
// and how the run is assessed are Rollouts' rules (package rules); the
// runner does the I/O: it enqueues the measurements, reads their
// outcomes back, and writes the AnalysisRun's status.
//
// A measurement is recorded Running in the AnalysisRun's status before
// its action exists, and named by its ordinal: after a restart, the
// runner finds the action of every measurement in flight (or enqueues
// it), so none is taken twice and none is lost.
package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/analysis/rules"
	"taskactions/internal/pipeline"
	"taskactions/internal/taskactions"
)

// Runs is what the runner reads and writes of AnalysisRuns.
type Runs interface {
	RunInformer() cache.SharedIndexInformer
	// UpdateRunStatus writes a run (from its resource version).
	UpdateRunStatus(ctx context.Context, ar *rolloutsapi.AnalysisRun) (*rolloutsapi.AnalysisRun, error)
}

// Actions is what the runner needs of the action manager.
type Actions interface {
	Enqueue(ctx context.Context, req taskactions.EnqueueRequest) (*v1.TaskAction, bool, error)
	GetTaskAction(ctx context.Context, id taskactions.ActionID) (*v1.TaskAction, error)
	// Action is an action's view, live or from history.
	Action(ctx context.Context, id taskactions.ActionID) (*taskactions.ActionUpdate, error)
	PutStatus(ctx context.Context, id taskactions.ActionID, attempt uint32, st taskactions.StatusUpdate) (*v1.TaskAction, error)
	AbortAction(ctx context.Context, id taskactions.ActionID, reason string) (taskactions.Action, error)
	Informer() cache.SharedIndexInformer
}

// Config holds the runner's dependencies.
type Config struct {
	Runs    Runs
	Actions Actions
	// Jobs lets job metrics run, each measurement a `process` action
	// (the image is not pulled: see providers.JobProcess); without it a
	// job measurement is Error, saying so.
	Jobs    bool
	Workers int
	Log     zerolog.Logger
	Now     func() time.Time // time.Now when nil
	// Finished, when set, is told the phase of each run as the runner
	// writes it completed (for metrics).
	Finished func(rolloutsapi.AnalysisPhase)
}

// Runner runs AnalysisRuns.
type Runner struct{ cfg Config }

// New returns a runner.
func New(cfg Config) *Runner {
	cfg.Workers = max(cfg.Workers, 1)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Runner{cfg: cfg}
}

// Run runs AnalysisRuns until ctx ends: on their events, and on their
// measurements' actions'.
func (r *Runner) Run(ctx context.Context, ready func()) error {
	k := pipeline.NewKeyQueue("analysis-runner", r.cfg.Workers, r.cfg.Log)
	runs := r.cfg.Runs.RunInformer()
	wake := func(obj any) {
		if ta, ok := pipeline.Deleted[*v1.TaskAction](obj); ok && ta.Spec.Domain == Domain {
			if key, ok := r.runKey(ta); ok {
				k.AddKey(key)
			}
		}
	}
	reg, err := r.cfg.Actions.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { wake(obj) }, DeleteFunc: wake,
	})
	if err != nil {
		return err
	}
	defer func() { _ = r.cfg.Actions.Informer().RemoveEventHandler(reg) }()
	return k.Run(ctx, ready, runs, cache.ResourceEventHandlerFuncs{
		AddFunc:    k.Add,
		UpdateFunc: func(_, obj any) { k.Add(obj) },
	}, func(ctx context.Context, key string) error {
		again, err := r.reconcile(ctx, key)
		if again > 0 {
			k.AddAfter(key, again)
		}
		return err
	})
}

// runKey is the key of the AnalysisRun whose run an action is in: the
// root action's template names it.
func (r *Runner) runKey(ta *v1.TaskAction) (string, bool) {
	for _, obj := range r.cfg.Runs.RunInformer().GetIndexer().List() {
		ar := obj.(*rolloutsapi.AnalysisRun)
		if ar.Namespace == ta.Spec.Project && runName(ar.Name) == ta.Spec.RunName {
			return ar.Namespace + "/" + ar.Name, true
		}
	}
	return "", false
}

// reconcile takes one pass over an AnalysisRun, and says when to look
// again if no event will.
func (r *Runner) reconcile(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := r.cfg.Runs.RunInformer().GetStore().GetByKey(key)
	if err != nil || !exists {
		return 0, err
	}
	ar := obj.(*rolloutsapi.AnalysisRun)
	if ar.DeletionTimestamp != nil {
		return 0, nil
	}
	now := r.cfg.Now()
	if ar.Status.Phase.Completed() {
		return 0, r.endRun(ctx, ar)
	}
	if err := r.startRun(ctx, ar); err != nil {
		return 0, err
	}
	next := ar.DeepCopy()
	if err := r.collect(ctx, next, now); err != nil {
		return 0, err
	}
	plan := r.plan(next, now)
	next.Status = plan.Status
	if !equality.Semantic.DeepEqual(ar.Status, next.Status) {
		written, err := r.cfg.Runs.UpdateRunStatus(ctx, next)
		switch {
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			return 0, nil // a newer version is on its way, or the run is gone
		case err != nil:
			return 0, fmt.Errorf("write the status of AnalysisRun %s: %w", key, err)
		}
		next = written
		if next.Status.Phase.Completed() && r.cfg.Finished != nil {
			r.cfg.Finished(next.Status.Phase)
		}
	}
	for _, d := range plan.Due {
		if err := r.enqueue(ctx, next, d); err != nil {
			return 0, err
		}
	}
	for _, d := range plan.Cancel {
		r.cancel(ctx, next, d)
	}
	if next.Status.Phase.Completed() {
		return 0, r.endRun(ctx, next)
	}
	return plan.Next, nil
}

// plan is Rollouts' pass over ar, unless this runner cannot run it: then
// the run is Error, saying why, as Rollouts ends a run it cannot start.
func (r *Runner) plan(ar *rolloutsapi.AnalysisRun, now time.Time) rules.Plan {
	if why := r.refusal(ar); why != "" {
		st := ar.Status.DeepCopy()
		t := metav1.NewTime(now)
		st.Phase, st.Message, st.CompletedAt = rolloutsapi.AnalysisPhaseError, why, &t
		return rules.Plan{Status: *st}
	}
	return rules.Step(ar, nil, now)
}

// collect records the outcome of every measurement in flight whose
// action has ended; one whose action does not exist yet (the server
// stopped between the status write and the enqueue) is enqueued.
func (r *Runner) collect(ctx context.Context, ar *rolloutsapi.AnalysisRun, now time.Time) error {
	for _, d := range rules.InFlight(&ar.Status) {
		m, done, err := r.outcome(ctx, ar, d)
		if errors.Is(err, pipeline.ErrNotFound) {
			if err := r.enqueue(ctx, ar, d); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if done {
			rules.Finish(&ar.Status, d, m, now)
		}
	}
	return nil
}

// startRun enqueues the run's root action (idempotent) and reports it
// running.
func (r *Runner) startRun(ctx context.Context, ar *rolloutsapi.AnalysisRun) error {
	ta, _, err := r.cfg.Actions.Enqueue(ctx, taskactions.EnqueueRequest{
		ID: rootID(ar), TaskType: RootTaskType, TaskTemplate: rootTemplate(ar), ShortName: taskactions.FitShortName(ar.Name),
		Group: ar.Labels["kargo.akuity.io/stage"],
	})
	if err != nil {
		return fmt.Errorf("enqueue the run of AnalysisRun %s/%s: %w", ar.Namespace, ar.Name, err)
	}
	if v1.PhaseOf(ta.Status.Conditions) == v1.PhaseQueued {
		_, err = r.cfg.Actions.PutStatus(ctx, rootID(ar), 1, taskactions.StatusUpdate{Phase: v1.PhaseRunning})
	}
	return err
}

// endRun ends the root action as the run ended: Successful succeeds,
// anything else fails with the run's message. An action already ended is
// left as it is.
func (r *Runner) endRun(ctx context.Context, ar *rolloutsapi.AnalysisRun) error {
	ta, err := r.cfg.Actions.GetTaskAction(ctx, rootID(ar))
	if errors.Is(err, pipeline.ErrNotFound) {
		return nil // never started, or retired
	}
	if err != nil || v1.PhaseOf(ta.Status.Conditions).Terminal() {
		return err
	}
	st := taskactions.StatusUpdate{Phase: v1.PhaseSucceeded, Message: string(ar.Status.Phase)}
	if ar.Status.Phase != rolloutsapi.AnalysisPhaseSuccessful {
		st = taskactions.StatusUpdate{Phase: v1.PhaseFailed, Message: ar.Status.Message, Error: &v1.ErrorState{
			Code: "Analysis" + string(ar.Status.Phase), Kind: v1.ErrorKindUser, Message: ar.Status.Message,
		}}
	}
	_, err = r.cfg.Actions.PutStatus(ctx, rootID(ar), max(ta.Status.Attempts, 1), st)
	if errors.Is(err, pipeline.ErrConflict) {
		return nil // ended meanwhile
	}
	return err
}

// cancel aborts the action of a measurement the run no longer wants.
func (r *Runner) cancel(ctx context.Context, ar *rolloutsapi.AnalysisRun, d rules.Due) {
	if _, err := r.cfg.Actions.AbortAction(ctx, measurementID(ar, d), "the AnalysisRun no longer wants this measurement"); err != nil && !errors.Is(err, pipeline.ErrNotFound) {
		r.cfg.Log.Warn().Err(err).Str("analysisRun", ar.Name).Str("metric", d.Metric).Msg("abort a measurement")
	}
}
