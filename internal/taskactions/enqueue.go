package taskactions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"go.opentelemetry.io/otel/trace"

	v1 "taskactions/api/v1"
	"taskactions/internal/tracing"
)

// RunSpec is run-wide settings, copied onto the action (and inherited by
// its children).
type RunSpec struct {
	Labels        map[string]string
	Annotations   map[string]string
	Envs          map[string]string
	Interruptible *bool
}

// MaxShortName is the longest short name an action takes (the API's
// maxLength).
const MaxShortName = 63

// FitShortName cuts a name made by this server (a Promotion's, a step's
// alias, an AnalysisRun's: ASCII) to MaxShortName bytes.
func FitShortName(s string) string { return s[:min(len(s), MaxShortName)] }

// EnqueueRequest is a new action.
type EnqueueRequest struct {
	ID            ActionID
	Parent        string // empty for a run's root action
	InputURI      string
	RunOutputBase string
	Group         string
	TaskType      string
	// TaskTemplate is the task template as JSON; it is stored in
	// spec.taskTemplate in canonical form.
	TaskTemplate json.RawMessage
	ShortName    string
	CacheKey     string
	RunSpec      *RunSpec
	// MayExecute records that the enqueuer was allowed execute in the
	// project and domain (v1.AnnotationMayExecute): its task's token may
	// then enqueue tasks that run commands. A child never inherits it.
	MayExecute bool
}

// Enqueue creates the TaskAction of an action. It is idempotent: the same
// request again returns the existing object with created false; the same
// id with a different spec is ErrConflict; a child whose parent does not
// exist is ErrNotFound, and a child of an aborted parent ErrConflict. An
// action that finished and was retired to history is never made again
// (its task would run twice), nor given a new child (ErrRetired): Enqueue,
// which returns objects, answers ErrRetired for it too; EnqueueView
// answers with its retired view.
func (m *Manager) Enqueue(ctx context.Context, req EnqueueRequest) (*v1.TaskAction, bool, error) {
	ta, retired, created, err := m.enqueue(ctx, req)
	if err == nil && retired != nil {
		return nil, false, fmt.Errorf("action %s: %w", req.ID, ErrRetired)
	}
	return ta, created, err
}

// EnqueueView is Enqueue as clients see it: the view of the action made,
// or of the one that exists, live or retired.
func (m *Manager) EnqueueView(ctx context.Context, req EnqueueRequest) (Action, bool, error) {
	ta, retired, created, err := m.enqueue(ctx, req)
	switch {
	case err != nil:
		return Action{}, false, err
	case retired != nil:
		return retired.Action, false, nil
	}
	return ViewOf(ta), created, nil
}

// retiredError carries the view of an action found retired on the way.
type retiredError struct{ view *ActionUpdate }

func (e *retiredError) Error() string { return "retired" }

func (m *Manager) enqueue(ctx context.Context, req EnqueueRequest) (ta *v1.TaskAction, retired *ActionUpdate, created bool, err error) {
	if err := checkRequest(req); err != nil {
		return nil, nil, false, err
	}
	ta, created, err = m.enqueueLive(ctx, req)
	var r *retiredError
	if errors.As(err, &r) {
		return nil, r.view, false, sameAsRetired(req, r.view)
	}
	return ta, nil, created, err
}

// sameAsRetired: a request for a retired action is a repeat when it asks
// for what history shows of it (parent, task type, names, URIs, and the
// template's size and form: history keeps the view, not the template).
func sameAsRetired(req EnqueueRequest, u *ActionUpdate) error {
	a := &u.Action
	tmpl, err := canonicalJSON(req.TaskTemplate)
	if err != nil {
		return fmt.Errorf("task template: %v: %w", err, ErrInvalid)
	}
	sameTemplate := a.TaskTemplate == nil && len(tmpl) == 0 ||
		a.TaskTemplate != nil && a.TaskTemplate.Size == len(tmpl) && a.TaskTemplate.Encoding == "json"
	if a.Parent != req.Parent || a.TaskType != req.TaskType || a.ShortName != req.ShortName || a.Group != req.Group ||
		a.InputURI != req.InputURI || a.RunOutputBase != req.RunOutputBase || !sameTemplate {
		return fmt.Errorf("action %s exists with another spec (it finished and was retired): %w", req.ID, ErrConflict)
	}
	return nil
}

// retiredOrNot is nil when history has no retired record of id, and
// else the error that carries its view (or says history did not answer).
func (h archive) retiredOrNot(ctx context.Context, id ActionID) error {
	u, err := h.retired(ctx, id)
	switch {
	case err != nil:
		return err
	case u != nil:
		return &retiredError{u}
	}
	return nil
}

func (m *Manager) enqueueLive(ctx context.Context, req EnqueueRequest) (ta *v1.TaskAction, created bool, err error) {
	var parent *v1.TaskAction
	if req.Parent != "" {
		if parent, err = m.parentOf(ctx, req); err != nil {
			if errors.Is(err, ErrRetired) { // the request may repeat a retired child's
				if rerr := m.history.retiredOrNot(ctx, req.ID); rerr != nil {
					return nil, false, rerr
				}
			}
			return nil, false, err
		}
	}
	// A child lives with its parent (owner references do not cross
	// namespaces), wherever that is; a root where the template says.
	ns := m.Namespace(req.ID.Project, req.ID.Domain)
	if parent != nil {
		ns = parent.Namespace
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return nil, false, fmt.Errorf("namespace %q from the template: %s: %w", ns, strings.Join(errs, "; "), ErrInvalid)
	}
	want, err := m.cfg.build(ns, req, parent)
	if err != nil {
		return nil, false, err
	}
	tctx := m.traceParent(ctx, parent)
	if m.cfg.Tracer != nil {
		// Room for the context the object will carry, so that its size is
		// checked as it is stored (the executor checks it again).
		want.Annotations = tracing.Reserve(tctx, want.Annotations)
	}
	if err := CheckSize(want); err != nil {
		return nil, false, err
	}
	if have, _ := m.cached.get(req.ID); have != nil {
		return existing(req.ID, have, want) // a repeat: no span (the orchestrator repeats each round)
	}
	if m.cfg.Tracer != nil {
		var span trace.Span
		ctx, span = m.startEnqueue(tctx, req)
		defer func() { endEnqueue(span, created, err) }()
		// In the create itself: the context costs no write of its own.
		want.Annotations = tracing.Annotate(ctx, want.Annotations)
	}
	// Checked last before the create: an object retired a moment ago has
	// its record marked before it goes.
	if err := m.history.retiredOrNot(ctx, req.ID); err != nil {
		return nil, false, err
	}
	release := func() {}
	if parent == nil && m.ns.perPair() {
		if release, err = m.ns.owners.claim(ns, req.ID.Project, req.ID.Domain); err != nil {
			return nil, false, err
		}
	}
	if err := m.ns.ensure(ctx, ns); err != nil {
		release()
		return nil, false, err
	}
	out, created, err := m.objects.create(ctx, req.ID, want)
	switch {
	case err != nil:
		release()
	case created:
		m.actions.Wrote(out)
		return out, true, nil
	default:
		return existing(req.ID, out, want)
	}
	switch {
	case apierrors.IsInvalid(err):
		return nil, false, fmt.Errorf("%s: %w", apiMessage(err), ErrInvalid)
	case isTooLarge(err):
		return nil, false, fmt.Errorf("action %s: %s: %w", req.ID, apiMessage(err), ErrTooLarge)
	case errors.Is(err, ErrConflict):
		return nil, false, err
	}
	return nil, false, fmt.Errorf("create action %s: %w", req.ID, err)
}

// existing is the answer to an enqueue of an action that exists: itself
// when the spec is the same (the request was repeated), ErrConflict when
// not.
func existing(id ActionID, have, want *v1.TaskAction) (*v1.TaskAction, bool, error) {
	if !sameSpec(&have.Spec, &want.Spec) {
		return nil, false, fmt.Errorf("action %s exists with another spec: %w", id, ErrConflict)
	}
	return have, false, nil
}

// parentOf returns the parent of a new child. The cache may not have a
// parent created a moment ago, so a miss is checked against the API server.
func (m *Manager) parentOf(ctx context.Context, req EnqueueRequest) (*v1.TaskAction, error) {
	pid := ActionID{req.ID.Project, req.ID.Domain, req.ID.Run, req.Parent}
	p, err := m.cached.get(pid)
	if err == nil && p == nil {
		// Created by this server a moment ago? Wait for the cache, then
		// ask the API server.
		m.actions.CatchUp(ctx)
		if p, err = m.cached.get(pid); err == nil && p == nil {
			p, err = m.objects.live(ctx, pid)
		}
	}
	if errors.Is(err, ErrNotFound) {
		switch err := m.history.gone(ctx, pid); {
		case errors.Is(err, ErrRetired):
			return nil, fmt.Errorf("parent: %w (a finished parent takes no new children)", err)
		case errors.Is(err, ErrHistory):
			return nil, fmt.Errorf("parent: %w", err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("parent: %w", err)
	}
	if v1.Aborting(p) {
		return nil, fmt.Errorf("parent %s is aborted: %w", pid, ErrConflict)
	}
	return p, nil
}

// build makes the object. Labels: the run's labels, then the parent's (for
// a child), then ours, which always win. Annotations and env vars inherit
// the same way; the request's run spec overrides what the parent gave.
func (cfg *Config) build(ns string, req EnqueueRequest, parent *v1.TaskAction) (*v1.TaskAction, error) {
	tmpl, err := canonicalJSON(req.TaskTemplate)
	if err != nil {
		return nil, fmt.Errorf("task template: %v: %w", err, ErrInvalid)
	}
	rs := req.RunSpec
	if rs == nil {
		rs = &RunSpec{}
	}
	labels, annotations, envs := map[string]string{}, map[string]string{}, map[string]string{}
	interruptible := rs.Interruptible
	if parent != nil {
		maps.Copy(labels, parent.Labels)
		delete(labels, v1.LabelTerminalState)
		delete(labels, v1.LabelFlyteTerminalState)
		maps.Copy(annotations, parent.Annotations)
		delete(annotations, v1.AnnotationAbortReason)
		delete(annotations, v1.AnnotationMayExecute)
		delete(annotations, v1.AnnotationPendingReason)
		maps.Copy(envs, parent.Spec.EnvVars)
		if interruptible == nil {
			interruptible = parent.Spec.Interruptible
		}
	}
	maps.Copy(labels, rs.Labels)
	maps.Copy(annotations, rs.Annotations)
	if req.MayExecute {
		annotations[v1.AnnotationMayExecute] = "true"
	}
	if cfg.Pending != nil {
		if why := cfg.Pending(req.TaskType); why != "" {
			annotations[v1.AnnotationPendingReason] = why
		}
	}
	maps.Copy(envs, rs.Envs)
	id := req.ID
	maps.Copy(labels, map[string]string{
		v1.LabelProject: id.Project, v1.LabelDomain: id.Domain, v1.LabelRun: id.Run,
		v1.LabelAction: id.Name, v1.LabelIsRoot: fmt.Sprint(parent == nil), v1.LabelActionType: req.TaskType,
	})
	delete(labels, v1.LabelParent)
	ta := &v1.TaskAction{
		ObjectMeta: metav1.ObjectMeta{Name: objectName(id.Run, id.Name), Namespace: ns, Labels: labels, Annotations: nilIfEmpty(annotations)},
		Spec: v1.TaskActionSpec{
			RunName: id.Run, Project: id.Project, Domain: id.Domain, ActionName: id.Name,
			InputURI: req.InputURI, RunOutputBase: req.RunOutputBase, TaskType: req.TaskType,
			TaskTemplate: tmpl, CacheKey: req.CacheKey, ShortName: req.ShortName,
			EnvVars: nilIfEmpty(envs), Interruptible: interruptible, Group: req.Group,
		},
	}
	if cfg.Finalizers != nil {
		ta.Finalizers = cfg.Finalizers(req.TaskType)
	}
	if parent != nil {
		ta.Spec.ParentActionName = &req.Parent
		ta.Labels[v1.LabelParent] = req.Parent
		ta.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: v1.SchemeGroupVersion.String(), Kind: "TaskAction", Name: parent.Name, UID: parent.UID,
		}}
	}
	return ta, nil
}

// canonicalJSON re-encodes JSON with sorted keys and no spaces, so the same
// template sent twice with keys in another order is the same spec.
func canonicalJSON(raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep big integers exact
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the template")
	}
	return json.Marshal(v)
}

func sameSpec(a, b *v1.TaskActionSpec) bool {
	x, y := a.DeepCopy(), b.DeepCopy()
	for _, s := range []*v1.TaskActionSpec{x, y} {
		if len(s.EnvVars) == 0 {
			s.EnvVars = nil
		}
		if len(s.TaskTemplate) == 0 {
			s.TaskTemplate = nil
		}
	}
	return reflect.DeepEqual(x, y)
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// apiMessage is the API server's message for a rejected object, which names
// the offending fields.
func apiMessage(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Message
	}
	return err.Error()
}
