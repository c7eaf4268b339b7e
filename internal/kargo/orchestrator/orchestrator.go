// Package orchestrator runs each Kargo Promotion as a run of TaskActions,
// beside the executor (which runs the steps): the root action is the
// Promotion, and each promotion step a child action whose task type is the
// step's `uses` (the run's names are package promotions'). Between steps it
// does what package engine decides; what it has decided it keeps in the
// Promotion's status (records.go).
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kargoapi "taskactions/api/kargo/v1alpha1"
	v1 "taskactions/api/v1"
	"taskactions/internal/kargo/engine"
	"taskactions/internal/kargo/promotions"
	"taskactions/internal/kargo/steps"
	"taskactions/internal/pipeline"
	"taskactions/internal/taskactions"
	"taskactions/internal/tracing"
)

// Actions is what the orchestrator needs of the action manager.
type Actions interface {
	Enqueue(ctx context.Context, req taskactions.EnqueueRequest) (*v1.TaskAction, bool, error)
	GetTaskAction(ctx context.Context, id taskactions.ActionID) (*v1.TaskAction, error)
	// Action is an action's view, live or, once its object is gone (an
	// abort deletes it; retention retires it), from history.
	Action(ctx context.Context, id taskactions.ActionID) (*taskactions.ActionUpdate, error)
	PutStatus(ctx context.Context, id taskactions.ActionID, attempt uint32, st taskactions.StatusUpdate) (*v1.TaskAction, error)
	AbortAction(ctx context.Context, id taskactions.ActionID, reason string) (taskactions.Action, error)
	Informer() cache.SharedIndexInformer
}

// Promotions is what the orchestrator needs of the Promotion manager.
type Promotions interface {
	PromotionInformer() cache.SharedIndexInformer
	// Cached is a Promotion from the cache, nil when there is none.
	Cached(namespace, name string) (*kargoapi.Promotion, error)
	// OfRun is the Promotion whose run is run in project, if any.
	OfRun(project, run string) *kargoapi.Promotion
	ForStage(project, stage string) []*kargoapi.Promotion
	// Stored is a Promotion read from the API server, nil when there is
	// none.
	Stored(ctx context.Context, namespace, name string) (*kargoapi.Promotion, error)
	// WriteStatus writes a Promotion's status (pipeline's errors).
	WriteStatus(ctx context.Context, p *kargoapi.Promotion) (*kargoapi.Promotion, error)
	// SetStart records the start its steps run in (promotions.StartOf),
	// from the resource version p names (pipeline's errors).
	SetStart(ctx context.Context, p *kargoapi.Promotion, start int) (*kargoapi.Promotion, error)
}

// Stages is what the orchestrator reads of Stages: the Stage cache.
type Stages interface {
	Informer() cache.SharedIndexInformer
	Get(namespace, name string) (*kargoapi.Stage, error)
}

// Freight finds the Freight a Promotion promotes.
type Freight interface {
	Named(ctx context.Context, project, name, alias string) (*kargoapi.Freight, error)
	// ByName reads Freight by name only; nil, nil when there is none.
	ByName(ctx context.Context, project, name string) (*kargoapi.Freight, error)
}

// Config holds the orchestrator's dependencies.
type Config struct {
	Promotions Promotions
	Stages     Stages
	Freight    Freight
	Actions    Actions
	// Runnable reports whether the executor runs a task type; a step whose
	// `uses` it does not run ends Errored, with Kargo's message.
	Runnable func(taskType string) bool
	// OutputRoot is the executor's: a step's outputs are in
	// <OutputRoot>/<project>/<domain>/<run>/<action>/outputs.json, which
	// the executor writes for every action that succeeds. Steps run only
	// on this server's executor (Runnable), so a succeeded step without
	// the file ran on another replica's (errNoOutputs).
	OutputRoot string
	// WorkDirs are the Promotions' working directories on this disk (the
	// executor's): made before a Promotion's first step, removed once it
	// has ended (startover.go); nil: none.
	WorkDirs WorkDirs
	// Warehouses are the Warehouses' subscriptions, for Kargo's freight
	// functions (imageFrom() and the like); nil: judged from the Freight
	// (engine.Finder).
	Warehouses engine.Warehouses
	Workers    int
	Log        zerolog.Logger
	// Finished, when set, is told each Promotion's terminal phase as it
	// is written (for metrics).
	Finished func(kargoapi.PromotionPhase)
}

// WorkDirs are the Promotions' working directories.
type WorkDirs interface {
	Exists(project, run string) (bool, error)
	// Make is idempotent.
	Make(project, run string) error
	Remove(project, run string) error
}

// Orchestrator runs each Promotion as a run of TaskActions, beside the
// executor (which runs the steps): one Promotion at a time per Stage, the
// one the Stage names currentPromotion (the Stage controller keeps Kargo's
// queue); its steps in order, step N+1 enqueued once step N is terminal,
// with Kargo's rules between them (package engine). What it has
// decided is in the Promotion's status (step metadata, outputs in state),
// written before the step's action is enqueued: a restart resumes from
// there, and no step runs twice, unless the steps' working directory was
// lost with its replica: then the Promotion starts over, as Kargo's does
// (startover.go).
type Orchestrator struct {
	cfg Config
}

// New returns an orchestrator over the caches of Promotions and Stages.
func New(cfg Config) *Orchestrator {
	cfg.Workers = max(cfg.Workers, 1)
	return &Orchestrator{cfg: cfg}
}

// Run reconciles Promotions until ctx ends: on their own events, on their
// Stage's (the queue moves), and on their actions'.
func (o *Orchestrator) Run(ctx context.Context, ready func()) error {
	k := pipeline.NewKeyQueue("promotions", o.cfg.Workers, o.cfg.Log)
	stages := o.cfg.Stages.Informer()
	ofStage := func(obj any) {
		s, ok := pipeline.Deleted[*kargoapi.Stage](obj)
		if !ok {
			return
		}
		for _, p := range o.cfg.Promotions.ForStage(s.Namespace, s.Name) {
			if !p.Status.Phase.IsTerminal() {
				k.Add(p)
			}
		}
	}
	sreg, err := stages.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { ofStage(obj) },
		// Its running Promotion ends Errored now (roundNoStage), not at its
		// step's next event.
		DeleteFunc: ofStage,
	})
	if err != nil {
		return err
	}
	defer func() { _ = stages.RemoveEventHandler(sreg) }()
	areg, err := o.cfg.Actions.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		// A run whose Promotion was deleted while this server was not
		// there to hear it (orphanedRun).
		AddFunc: func(obj any) {
			if key, ok := o.orphanedRun(obj.(*v1.TaskAction)); ok {
				k.AddKey(key)
			}
		},
		UpdateFunc: func(_, obj any) {
			if p := o.promotionOf(obj.(*v1.TaskAction)); p != nil {
				k.Add(p)
			}
		},
		// An aborted step's object is deleted.
		DeleteFunc: func(obj any) {
			if ta, ok := pipeline.Deleted[*v1.TaskAction](obj); ok {
				if p := o.promotionOf(ta); p != nil {
					k.Add(p)
				}
			}
		},
	})
	if err != nil {
		return err
	}
	defer func() { _ = o.cfg.Actions.Informer().RemoveEventHandler(areg) }()
	reconcile := func(ctx context.Context, key string) error {
		again, err := o.reconcile(ctx, key)
		if err == nil && again > 0 {
			k.AddAfter(key, again)
		}
		return err
	}
	return k.Run(ctx, ready, o.cfg.Promotions.PromotionInformer(), cache.ResourceEventHandlerFuncs{
		AddFunc:    k.Add,
		UpdateFunc: func(_, obj any) { k.Add(obj) },
		// A deleted Promotion's run is aborted, then its working directory
		// removed (gone).
		DeleteFunc: func(obj any) {
			if p, ok := pipeline.Deleted[*kargoapi.Promotion](obj); ok {
				k.Add(p)
			}
		},
	}, reconcile)
}

// promotionOf is the Promotion whose run an action belongs to, if any.
func (o *Orchestrator) promotionOf(ta *v1.TaskAction) *kargoapi.Promotion {
	if ta.Spec.Domain != promotions.Domain {
		return nil
	}
	return o.cfg.Promotions.OfRun(ta.Spec.Project, ta.Spec.RunName)
}

// reconcile advances one Promotion as far as it can go now, and says
// when to look at it again without an event (zero: on its events alone).
func (o *Orchestrator) reconcile(ctx context.Context, key string) (again time.Duration, err error) {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	p, err := o.cfg.Promotions.Cached(ns, name)
	if err != nil {
		return 0, err
	}
	if p == nil {
		return 0, o.gone(ctx, ns, name)
	}
	if p.Status.Phase.IsTerminal() {
		o.removeWorkDir(p)
		return 0, nil
	}
	// The cache, not the API's read: no project check (a namespace read on
	// a cluster) at every round.
	st, err := o.cfg.Stages.Get(ns, p.Spec.Stage)
	if err != nil {
		return 0, err
	}
	switch roundOf(p, st) {
	case roundNoStage:
		return 0, o.noStage(ctx, p)
	case roundAccept:
		return 0, o.accept(ctx, p, st)
	case roundAbort:
		return 0, o.abort(ctx, p)
	case roundRun:
		if err := o.startRun(ctx, p); err != nil {
			return 0, err
		}
		if startedOver, err := o.workDir(ctx, p); err != nil || startedOver {
			return 0, err
		}
		// A working directory lost while a step runs sends no event: the
		// Gate holds that step, which then never ends on its own.
		return workDirPoll, o.advance(ctx, p)
	}
	return 0, nil
}

// accept marks a new Promotion Pending, with the Freight and the Freight
// collection it will leave the Stage with.
func (o *Orchestrator) accept(ctx context.Context, p *kargoapi.Promotion, st *kargoapi.Stage) error {
	f, err := o.cfg.Freight.Named(ctx, p.Namespace, p.Spec.Freight, "")
	if err != nil {
		return o.finish(ctx, p, kargoapi.PromotionPhaseErrored, err.Error())
	}
	return o.updateStatus(ctx, p, func(s *kargoapi.PromotionStatus) {
		ref := f.Reference()
		s.Phase, s.Freight = kargoapi.PromotionPhasePending, &ref
		s.FreightCollection = collectionAfter(st, ref)
	})
}

// startRun enqueues the run's root action (idempotent) and marks both
// running.
func (o *Orchestrator) startRun(ctx context.Context, p *kargoapi.Promotion) error {
	root := o.rootID(p)
	// Under the request that made the Promotion, when it was traced: the
	// run's trace is the Promotion's.
	ctx = tracing.FromAnnotations(ctx, p.Annotations)
	ta, _, err := o.cfg.Actions.Enqueue(ctx, taskactions.EnqueueRequest{
		ID: root, TaskType: promotions.RootTaskType, TaskTemplate: rootTemplate(p), ShortName: taskactions.FitShortName(p.Name), Group: p.Spec.Stage,
	})
	if unrunnable(err) {
		return o.finish(ctx, p, kargoapi.PromotionPhaseErrored, fmt.Sprintf("cannot start the run: %v", err))
	}
	if err != nil {
		return fmt.Errorf("enqueue the run of Promotion %s: %w", p.Name, err)
	}
	if v1.PhaseOf(ta.Status.Conditions) == v1.PhaseQueued {
		if _, err := o.cfg.Actions.PutStatus(ctx, root, 1, taskactions.StatusUpdate{Phase: v1.PhaseRunning}); err != nil {
			return err
		}
	}
	if p.Status.Phase == kargoapi.PromotionPhasePending {
		return o.updateStatus(ctx, p, func(s *kargoapi.PromotionStatus) { s.Phase = kargoapi.PromotionPhaseRunning })
	}
	return nil
}

func (o *Orchestrator) rootID(p *kargoapi.Promotion) taskactions.ActionID {
	r := promotions.RunOf(p)
	return taskactions.ActionID{Project: r.Project, Domain: r.Domain, Run: r.Run, Name: promotions.RootAction}
}

func (o *Orchestrator) stepID(p *kargoapi.Promotion, i int) taskactions.ActionID {
	id := o.rootID(p)
	id.Name = promotions.StepAction(i, promotions.StartOf(p))
	return id
}

// advance takes every decision that needs no waiting and writes them in
// one status update, before it enqueues the step to run next (so that a
// restart finds it decided); a finished Promotion ends its run first.
func (o *Orchestrator) advance(ctx context.Context, p *kargoapi.Promotion) error {
	next := p.DeepCopy()
	d, err := o.decide(ctx, next)
	if err != nil {
		return err
	}
	if d.Finished {
		if err := o.finishRun(ctx, p, d.Phase, d.Message); err != nil {
			return err
		}
		next.Status.Phase, next.Status.Message = d.Phase, d.Message
		next.Status.FinishedAt = &metav1.Time{Time: time.Now()}
	}
	if !equality.Semantic.DeepEqual(p.Status, next.Status) {
		if written, err := o.writeStatus(ctx, next); err != nil || !written {
			return err
		}
		if d.Finished && o.cfg.Finished != nil {
			o.cfg.Finished(d.Phase)
		}
	}
	if d.Run {
		return o.enqueueStep(ctx, p, d)
	}
	return nil
}

// decide records in p's status every decision it can take now, and
// returns the last one: Waiting (a step runs), Finished, or Run (the step
// to enqueue, recorded Running).
func (o *Orchestrator) decide(ctx context.Context, p *kargoapi.Promotion) (engine.Decision, error) {
	for {
		in := engine.Input{Steps: p.Spec.Steps, Vars: p.Spec.Vars, Ctx: contextOf(p), Done: records(p), Freight: o.freightScope(ctx, p)}
		if _, aborted := p.Annotations[kargoapi.AnnotationKeyAbort]; aborted {
			in.Aborted = abortMessage
		}
		// The step in flight: record its end, or wait for it.
		if n := len(in.Done); n > 0 && in.Done[n-1].Status == kargoapi.PromotionStepStatusRunning {
			a, err := o.step(ctx, o.stepID(p, n-1))
			switch {
			case errors.Is(err, pipeline.ErrNotFound):
				in.Done = in.Done[:n-1] // decided, not yet enqueued when the server stopped
			case err != nil:
				return engine.Decision{}, err
			default:
				r, ended := o.ended(p, n-1, in.Done[n-1], a)
				if !ended {
					return engine.Decision{Waiting: true}, nil
				}
				r = o.outcome(p, n-1, r, a)
				setRecord(&p.Status, n-1, r, p.Spec.Steps[n-1].ContinueOnError)
				continue
			}
		}
		d := engine.Decide(in)
		r, ok := recordOf(d, o.cfg.Runnable, time.Now())
		if !ok {
			return d, nil // Waiting or Finished
		}
		setRecord(&p.Status, d.Index, r, p.Spec.Steps[d.Index].ContinueOnError)
		if r.Status == kargoapi.PromotionStepStatusRunning {
			return d, nil // to enqueue
		}
	}
}

// enqueueStep enqueues the action of a step decided to run (idempotent).
func (o *Orchestrator) enqueueStep(ctx context.Context, p *kargoapi.Promotion, d engine.Decision) error {
	tmpl, err := stepTemplate(d)
	if err != nil {
		return fmt.Errorf("Promotion %s, step %q: %w", p.Name, d.Alias, err)
	}
	_, _, err = o.cfg.Actions.Enqueue(ctx, taskactions.EnqueueRequest{
		ID: o.stepID(p, d.Index), Parent: promotions.RootAction, TaskType: d.Uses, TaskTemplate: tmpl, ShortName: taskactions.FitShortName(d.Alias),
	})
	switch {
	case errors.Is(err, pipeline.ErrConflict):
		return nil // enqueued before a restart, with a config evaluated then: keep that one
	case unrunnable(err):
		now := time.Now()
		return o.updateStatus(ctx, p, func(s *kargoapi.PromotionStatus) {
			setRecord(s, d.Index, engine.StepRecord{Alias: d.Alias, Status: kargoapi.PromotionStepStatusErrored,
				Message: fmt.Sprintf("cannot run step %q: %v", d.Alias, err), StartedAt: &now, FinishedAt: &now},
				p.Spec.Steps[d.Index].ContinueOnError)
		})
	}
	return err
}

// errHistoryBehind: a step's object is gone (an abort deletes it) and
// history has not recorded its end yet; the round is tried again.
var errHistoryBehind = errors.New("its object is gone, and history has not recorded its end yet")

// step is the view of a step's action: live, or from history once its
// object is gone; ErrNotFound when it was never enqueued.
func (o *Orchestrator) step(ctx context.Context, id taskactions.ActionID) (*taskactions.Action, error) {
	ta, err := o.cfg.Actions.GetTaskAction(ctx, id)
	if err == nil {
		a := taskactions.ViewOf(ta)
		return &a, nil
	}
	if !errors.Is(err, pipeline.ErrNotFound) {
		return nil, err
	}
	u, err := o.cfg.Actions.Action(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case !u.Phase.Terminal():
		return nil, fmt.Errorf("step action %s: %w", id, errHistoryBehind)
	}
	return &u.Action, nil
}

// ended reports whether a step's action is terminal, and its record if so
// (stepEnd), with the outputs of a step that succeeded.
func (o *Orchestrator) ended(p *kargoapi.Promotion, i int, r engine.StepRecord, a *taskactions.Action) (engine.StepRecord, bool) {
	r, ended := stepEnd(p.Spec.Steps[i], r, a, time.Now())
	if !ended || a.Phase != v1.PhaseSucceeded {
		return r, ended
	}
	id := o.stepID(p, i)
	out, err := readOutputs(filepath.Join(o.cfg.OutputRoot, id.Project, id.Domain, id.Run, id.Name))
	if err != nil {
		r.Status, r.Message = kargoapi.PromotionStepStatusErrored, fmt.Sprintf("read the outputs of step %q: %v", r.Alias, err)
	}
	r.Outputs = out
	return r, true
}

// outcome refines the record of a step whose action ended with what its
// runner said, for a built-in step (package steps): Skipped, or Kargo's
// wording of its error.
func (o *Orchestrator) outcome(p *kargoapi.Promotion, i int, r engine.StepRecord, a *taskactions.Action) engine.StepRecord {
	id := o.stepID(p, i)
	out, err := steps.ReadOutcome(filepath.Join(o.cfg.OutputRoot, id.Project, id.Domain, id.Run, id.Name))
	if err != nil {
		o.cfg.Log.Warn().Err(err).Str("promotion", p.Name).Str("step", r.Alias).Msg("read the step's outcome")
		return r
	}
	return runnerEnd(p.Spec.Steps[i], r, a.Phase, a.Attempts, out)
}

// freightScope is what Kargo's freight functions see of p: its Freight
// collection, its Stage's requests, and the project's Freight.
func (o *Orchestrator) freightScope(ctx context.Context, p *kargoapi.Promotion) *engine.FreightScope {
	f := engine.Finder{Project: p.Namespace, Freight: p.Status.FreightCollection.References(), Warehouses: o.cfg.Warehouses}
	if st, err := o.cfg.Stages.Get(p.Namespace, p.Spec.Stage); err == nil && st != nil {
		f.Requests = st.Spec.RequestedFreight
	}
	return &engine.FreightScope{Ctx: ctx, Finder: f, Freight: func(ctx context.Context, name string) (*kargoapi.Freight, error) {
		return o.cfg.Freight.ByName(ctx, p.Namespace, name)
	}}
}

// removeWorkDir removes an ended Promotion's working directory.
func (o *Orchestrator) removeWorkDir(p *kargoapi.Promotion) {
	if o.cfg.WorkDirs == nil {
		return
	}
	r := promotions.RunOf(p)
	if err := o.cfg.WorkDirs.Remove(r.Project, r.Run); err != nil {
		o.cfg.Log.Warn().Err(err).Str("promotion", p.Name).Msg("remove the working directory")
	}
}

// updateStatus writes a Promotion's status from the cached object.
func (o *Orchestrator) updateStatus(ctx context.Context, p *kargoapi.Promotion, mutate func(*kargoapi.PromotionStatus)) error {
	next := p.DeepCopy()
	mutate(&next.Status)
	_, err := o.writeStatus(ctx, next)
	return err
}

// writeStatus writes a Promotion's status. A conflict means a newer
// version is on its way, whose event brings the Promotion back: nothing
// is written, and nothing more is done this round.
func (o *Orchestrator) writeStatus(ctx context.Context, next *kargoapi.Promotion) (written bool, err error) {
	_, err = o.cfg.Promotions.WriteStatus(ctx, next)
	if errors.Is(err, pipeline.ErrConflict) || errors.Is(err, pipeline.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
