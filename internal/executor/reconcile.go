package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	v1 "taskactions/api/v1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/taskactions"
)

// errMoved ends a status write whose basis changed under it (an abort, or
// another round): the next round starts from the new state.
var errMoved = errors.New("the action changed during the round")

// reconcile runs one round for the action under key and says when to come
// back (zero: when something changes).
func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := c.mgr.Informer().GetStore().GetByKey(key)
	if err != nil {
		c.forget(key)
		return 0, err
	}
	ta, _ := obj.(*v1.TaskAction) // nil when gone
	if err := c.releaseGone(ctx, key, ta); err != nil {
		return 0, err
	}
	if !exists {
		c.endAttemptSpan(key, "deleted", "")
		c.forget(key)
		return 0, nil
	}
	if c.stale(key, ta) {
		return 0, nil // our last write is on its way; its event brings us back
	}
	phase := v1.PhaseOf(ta.Status.Conditions)
	if ta.DeletionTimestamp != nil || phase.Terminal() {
		if phase.Terminal() {
			c.endAttemptSpan(key, "ended", "") // by another's write: none is open after ours
		} else {
			c.endAttemptSpan(key, "aborted", v1.AbortReasonOf(ta))
		}
		return 0, c.finish(ctx, key, ta)
	}
	// Stored by someone else, too big to record a status for its whole
	// life: fail it now, before anything runs, with as small a write as
	// there is.
	if err := taskactions.CheckSize(ta); err != nil {
		return 0, c.fail(ctx, key, ta, v1.ReasonInvalidSpec, v1.ErrorKindUser, "ObjectTooLarge", err.Error())
	}
	tmpl, err := parseTemplate(ta)
	if err != nil {
		return 0, c.fail(ctx, key, ta, v1.ReasonInvalidSpec, v1.ErrorKindUser, "InvalidSpec", err.Error())
	}
	plugin := c.cfg.Plugins[ta.Spec.TaskType]
	if plugin == nil || !c.types.Claims(ta.Spec.TaskType) {
		return 0, c.fail(ctx, key, ta, v1.ReasonPluginNotFound, v1.ErrorKindSystem, "PluginNotFound", c.unrunnable(ta.Spec.TaskType))
	}
	if added, err := c.addFinalizer(ctx, key, ta, plugin); added || err != nil {
		return 0, err
	}
	var first *firstRound
	if len(ta.Status.Conditions) == 0 {
		status, hit := c.lookupCache(ta, tmpl)
		if hit != nil {
			return 0, c.cacheHit(ctx, key, ta, hit)
		}
		first = &firstRound{cache: status}
	}
	tc := c.taskContext(key, ta, tmpl)
	if deadline, ok := c.attemptDeadline(ta, tmpl); ok {
		if left := time.Until(deadline); left <= 0 {
			c.abortAttempt(ctx, plugin, tc, key)
			c.endAttempt(ctx, plugin, tc, ta)
			return 0, c.fail(ctx, key, ta, v1.ReasonTimedOut, v1.ErrorKindUser, "TimedOut",
				fmt.Sprintf("attempt %d ran longer than its timeout of %s", ta.Status.Attempts, tmpl.Metadata.Timeout))
		}
	}
	if held, after, err := c.admit(ctx, key, ta, tc, plugin); held || err != nil {
		return after, err
	}
	c.hold(key, ta, plugin)
	after, err := c.round(ctx, key, ta, tc, plugin, first)
	return c.untilTimeout(ta, tmpl, after), err
}

// handle runs one round of the plugin, ended at the attempt's deadline or
// by an abort (rounds.go). A plugin may do its work within the round (an
// http call, a Kargo step's git command), which the check of the timeout
// before each round cannot end: then the plugin returns as if
// interrupted, and the next round ends the attempt TIMED_OUT or ABORTED.
func (c *Controller) handle(ctx context.Context, key string, ta *v1.TaskAction, tc *plugins.TaskContext, plugin plugins.Plugin) (plugins.Transition, error) {
	ctx, done := c.rounds.start(ctx, key)
	defer done()
	deadline, ok := c.attemptDeadline(ta, tc.Template)
	if d := timeoutOf(tc.Template); d > 0 && attemptStarting(ta) {
		deadline, ok = time.Now().Add(d), true // the attempt starts with this round
	}
	if ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	return plugin.Handle(ctx, tc)
}

// untilTimeout shortens a requeue so that the round after the attempt's
// timeout happens on time.
func (c *Controller) untilTimeout(ta *v1.TaskAction, tmpl plugins.Template, after time.Duration) time.Duration {
	d := timeoutOf(tmpl)
	if d <= 0 {
		return after
	}
	left := d // an attempt starting in this round has all of it
	if deadline, ok := c.attemptDeadline(ta, tmpl); ok {
		left = time.Until(deadline)
	}
	left += 10 * time.Millisecond
	if after == 0 || left < after {
		return left
	}
	return after
}

// firstRound is what the first round of an action also records: attempt
// 1, QUEUED, and the result of the cache lookup. It is written with the
// round's own transitions, in one write.
type firstRound struct {
	cache v1.CatalogCacheStatus
}

func (f *firstRound) apply(c *Controller, t *v1.TaskAction) {
	if f == nil {
		return
	}
	t.Status.Attempts = 1
	t.Status.CacheStatus = f.cache
	setPhase(t, v1.PhaseQueued, v1.ReasonQueued, "", false)
}

// cacheHit ends a new action at once, with the outputs of an earlier
// action of the same cache key and version, without running the plugin.
func (c *Controller) cacheHit(ctx context.Context, key string, ta, hit *v1.TaskAction) error {
	status := v1.CacheHit
	if err := copyOutputs(c.outputDir(hit), c.outputDir(ta)); err != nil {
		c.cfg.Log.Warn().Err(err).Str("action", key).Msg("cache hit, but copying its outputs failed")
		status = v1.CacheLookupFailure
	}
	outcome := ""
	if status == v1.CacheHit {
		outcome = outcomeCacheHit
	}
	return c.write(ctx, key, ta, outcome, func(t *v1.TaskAction) {
		(&firstRound{cache: status}).apply(c, t)
		if status == v1.CacheHit {
			setPhase(t, v1.PhaseSucceeded, v1.ReasonCompleted,
				fmt.Sprintf("cache hit: outputs of %s/%s reused", hit.Spec.RunName, hit.Spec.ActionName), false)
		}
	})
}

// round asks the plugin to advance the attempt and records what it says.
func (c *Controller) round(ctx context.Context, key string, ta *v1.TaskAction, tc *plugins.TaskContext, plugin plugins.Plugin, first *firstRound) (time.Duration, error) {
	starting := attemptStarting(ta)
	if starting {
		if err := os.MkdirAll(tc.OutputDir, 0o700); err != nil {
			return 0, fmt.Errorf("output dir: %w", err)
		}
		c.started.Store(attemptKey(ta), time.Now())
	}
	ctx = c.traceAttempt(ctx, key, ta)
	tr, err := c.handle(ctx, key, ta, tc, plugin)
	if err != nil {
		return c.systemFailure(ctx, key, ta, tc, plugin, first, "PluginError", err.Error())
	}
	var state []byte
	if tr.State != nil {
		if state, err = plugins.EncodeState(tr.State); err != nil {
			return c.systemFailure(ctx, key, ta, tc, plugin, first, "PluginError", err.Error())
		}
	}
	switch tr.Phase {
	case plugins.PhaseSystemRetryableFailure:
		return c.systemFailure(ctx, key, ta, tc, plugin, first, errorCode(tr, "SystemFailure"), errorMessage(tr))
	case plugins.PhaseLost:
		return c.lostAttempt(ctx, key, ta, tc, plugin, first, errorCode(tr, "Lost"), errorMessage(tr))
	case plugins.PhaseRetryableFailure, plugins.PhasePermanentFailure:
		return 0, c.userFailure(ctx, key, ta, tc, plugin, first, tr, state)
	case plugins.PhaseSuccess:
		if err := writeOutputs(tc.OutputDir, tr.Outputs); err != nil {
			return c.systemFailure(ctx, key, ta, tc, plugin, first, "OutputsFailed", err.Error())
		}
		c.endAttempt(ctx, plugin, tc, ta)
	}
	outcome := ""
	if tr.Phase == plugins.PhaseSuccess {
		outcome = outcomeSucceeded
	}
	err = c.write(ctx, key, ta, outcome, func(t *v1.TaskAction) {
		first.apply(c, t)
		if starting {
			setPhase(t, v1.PhaseInitializing, v1.ReasonInitializing, "", false)
		}
		setPluginPhase(t, tr, state)
		switch tr.Phase {
		case plugins.PhaseRunning:
			setPhase(t, v1.PhaseRunning, v1.ReasonExecuting, "", false)
		case plugins.PhaseSuccess:
			if t.Status.CacheStatus == v1.CacheMiss {
				t.Status.CacheStatus = v1.CachePopulated
			}
			setPhase(t, v1.PhaseRunning, v1.ReasonExecuting, "", false)
			setPhase(t, v1.PhaseSucceeded, v1.ReasonCompleted, tr.Info, false)
		}
	})
	return tr.RequeueAfter, err
}

// userFailure starts another attempt while the template's retries allow
// (attempts that failed for system reasons do not count), and fails the
// action for good after.
// The state of the round that failed for good is kept, for whoever reads
// what the attempt found (an analysis measurement's value).
func (c *Controller) userFailure(ctx context.Context, key string, ta *v1.TaskAction, tc *plugins.TaskContext, plugin plugins.Plugin, first *firstRound, tr plugins.Transition, state []byte) error {
	c.endAttempt(ctx, plugin, tc, ta)
	e := &v1.ErrorState{Code: errorCode(tr, "Failed"), Kind: v1.ErrorKindUser, Message: errorMessage(tr)}
	userAttempts := int(tc.Attempt) - int(ta.Status.SystemFailures)
	if tr.Phase == plugins.PhaseRetryableFailure && userAttempts < tc.Template.Metadata.Retries+1 {
		return c.write(ctx, key, ta, outcomeFailed, func(t *v1.TaskAction) {
			first.apply(c, t)
			setPluginPhase(t, tr, nil)
			t.Status.ErrorState = e
			c.retry(t, fmt.Sprintf("attempt %d failed (%s); retrying", t.Status.Attempts, e.Message))
		})
	}
	reason := v1.ReasonPermanentFailure
	if e.Code == "InvalidSpec" {
		reason = v1.ReasonInvalidSpec
	}
	return c.write(ctx, key, ta, outcomeFailed, func(t *v1.TaskAction) {
		first.apply(c, t)
		setPluginPhase(t, tr, state)
		t.Status.ErrorState = e
		setPhase(t, v1.PhaseFailed, reason, e.Message, false)
	})
}

// systemFailure counts a failure of the system (a plugin error): the
// attempt is cleaned up and another starts, until there were more than
// MaxSystemFailures.
func (c *Controller) systemFailure(ctx context.Context, key string, ta *v1.TaskAction, tc *plugins.TaskContext, plugin plugins.Plugin, first *firstRound, code, msg string) (time.Duration, error) {
	return c.countSystemFailure(ctx, key, ta, tc, plugin, first, code, msg, true)
}

// lostAttempt counts an attempt lost with the server process that ran it
// as a system failure (so it spends none of the task's retries), but it
// never ends the action: each crash costs the attempts it interrupted one
// system failure, and the limit is for failures of the system the action
// itself may cause again.
func (c *Controller) lostAttempt(ctx context.Context, key string, ta *v1.TaskAction, tc *plugins.TaskContext, plugin plugins.Plugin, first *firstRound, code, msg string) (time.Duration, error) {
	return c.countSystemFailure(ctx, key, ta, tc, plugin, first, code, msg, false)
}

func (c *Controller) countSystemFailure(ctx context.Context, key string, ta *v1.TaskAction, tc *plugins.TaskContext, plugin plugins.Plugin, first *firstRound, code, msg string, limited bool) (time.Duration, error) {
	c.abortAttempt(ctx, plugin, tc, key)
	c.endAttempt(ctx, plugin, tc, ta)
	failures := ta.Status.SystemFailures + 1
	c.cfg.Log.Warn().Str("action", key).Uint32("systemFailures", failures).Str("code", code).Msg(msg)
	e := &v1.ErrorState{Code: code, Kind: v1.ErrorKindSystem, Message: msg}
	outcome := outcomeSystemFailure
	if !limited {
		outcome = outcomeLost
	}
	err := c.write(ctx, key, ta, outcome, func(t *v1.TaskAction) {
		first.apply(c, t)
		t.Status.SystemFailures = failures
		t.Status.ErrorState = e
		if limited && int(failures) > c.cfg.MaxSystemFailures {
			t.Status.PluginState, t.Status.PluginStateVersion = nil, 0
			setPhase(t, v1.PhaseFailed, v1.ReasonPermanentFailure,
				fmt.Sprintf("%d system failures, more than the %d allowed; last: %s", failures, c.cfg.MaxSystemFailures, msg), false)
			return
		}
		c.retry(t, fmt.Sprintf("system failure in attempt %d (%s); retrying", t.Status.Attempts, msg))
	})
	if !limited {
		return 0, err // the server that lost it is gone: nothing to back off from
	}
	// Back off a little more with each system failure.
	return min(100*time.Millisecond<<min(failures, 7), 10*time.Second), err
}

// abortAttempt kills what the attempt may still run before its outcome is
// recorded; a failure to is logged, and finish tries again at the end.
func (c *Controller) abortAttempt(ctx context.Context, plugin plugins.Plugin, tc *plugins.TaskContext, key string) {
	if err := plugin.Abort(ctx, tc); err != nil {
		c.cfg.Log.Warn().Err(err).Str("action", key).Msg("plugin abort failed")
	}
}

// endAttempt lets the plugin release the attempt; a failure to is only
// logged, since the attempt's outcome is decided.
func (c *Controller) endAttempt(ctx context.Context, plugin plugins.Plugin, tc *plugins.TaskContext, ta *v1.TaskAction) {
	if err := plugin.Finalize(ctx, tc); err != nil {
		c.cfg.Log.Warn().Err(err).Str("action", ta.Namespace+"/"+ta.Name).Msg("plugin finalize failed")
	}
	c.attemptOver(ta)
}

// retry ends the attempt and queues the next one, as Flyte records an
// in-place restart: back to Queued (the message says why), never a
// FAILED that a client would take for the end.
func (c *Controller) retry(t *v1.TaskAction, msg string) {
	t.Status.Attempts++
	t.Status.PluginState, t.Status.PluginStateVersion = nil, 0
	setPhase(t, v1.PhaseQueued, v1.ReasonQueued, msg, true)
}

// fail ends the action (invalid spec, no plugin, timeout).
func (c *Controller) fail(ctx context.Context, key string, ta *v1.TaskAction, reason, kind, code, msg string) error {
	outcome := outcomeRefused
	if reason == v1.ReasonTimedOut {
		outcome = outcomeTimedOut
	}
	return c.write(ctx, key, ta, outcome, func(t *v1.TaskAction) {
		if t.Status.Attempts == 0 {
			t.Status.Attempts = 1
		}
		t.Status.ErrorState = &v1.ErrorState{Code: code, Kind: kind, Message: msg}
		phase := v1.PhaseFailed
		if reason == v1.ReasonTimedOut {
			phase = v1.PhaseTimedOut
		}
		setPhase(t, phase, reason, msg, false)
	})
}

// write records a round, and counts the attempt's outcome when it ends
// one (outcome not ""). mutate runs on the freshest object; if the status
// moved since the round read it (an abort came in), nothing is written
// and the next round starts from there.
func (c *Controller) write(ctx context.Context, key string, read *v1.TaskAction, outcome string, mutate func(*v1.TaskAction)) error {
	attempts, phase := read.Status.Attempts, v1.PhaseOf(read.Status.Conditions)
	out, err := c.mgr.UpdateStatus(ctx, taskactions.IDOf(read), func(t *v1.TaskAction) error {
		if t.Status.Attempts != attempts || v1.PhaseOf(t.Status.Conditions) != phase {
			return errMoved
		}
		before := t.Status.DeepCopy()
		mutate(t)
		if equality.Semantic.DeepEqual(before, &t.Status) {
			return taskactions.ErrNoChange // a round that found nothing new sends nothing
		}
		return nil
	})
	if errors.Is(err, errMoved) {
		c.wake(key)
		return nil
	}
	if err != nil {
		return err
	}
	c.expect(key, out)
	if outcome != "" {
		c.metrics.outcomes.WithLabelValues(outcome).Inc()
		msg := ""
		if e := out.Status.ErrorState; e != nil && outcome != outcomeSucceeded && outcome != outcomeCacheHit {
			msg = e.Message
		}
		c.endAttemptSpan(key, outcome, msg)
	}
	return nil
}

func (c *Controller) taskContext(key string, ta *v1.TaskAction, tmpl plugins.Template) *plugins.TaskContext {
	s := &ta.Spec
	tc := plugins.TaskContext{
		Project: s.Project, Domain: s.Domain, Run: s.RunName, Action: s.ActionName, Parent: parentOf(ta),
		UID: string(ta.UID), Attempt: max(ta.Status.Attempts, 1), Template: tmpl,
		Env: s.EnvVars, InputURI: s.InputURI, OutputDir: c.outputDir(ta), ServerURL: c.cfg.ServerURL,
		Wake: func() { c.wake(key) },
	}
	if c.cfg.TaskToken != nil {
		tc.Token = c.cfg.TaskToken(ta, timeoutOf(tmpl))
	}
	return tc.WithState(ta.Status.PluginStateVersion, ta.Status.PluginState)
}

func (c *Controller) outputDir(ta *v1.TaskAction) string {
	s := &ta.Spec
	return filepath.Join(c.cfg.OutputRoot, s.Project, s.Domain, s.RunName, s.ActionName)
}

func setPluginPhase(t *v1.TaskAction, tr plugins.Transition, state []byte) {
	t.Status.PluginPhase = tr.Phase.String()
	if tr.Info != "" {
		t.Status.PluginPhase += ": " + tr.Info
	}
	t.Status.PluginPhaseVersion = tr.Version
	if state != nil {
		t.Status.PluginState, t.Status.PluginStateVersion = state, tr.StateVersion
	}
}

// attemptStarting: the attempt is queued and this round starts it.
func attemptStarting(ta *v1.TaskAction) bool {
	return v1.PhaseOf(ta.Status.Conditions) == v1.PhaseQueued
}

// attemptDeadline is when the current attempt times out: its timeout after
// it started. This process knows the start to the nanosecond; after a
// restart only the history says it, in whole seconds (its last
// Initializing entry), so the deadline errs a second late, never early.
func (c *Controller) attemptDeadline(ta *v1.TaskAction, tmpl plugins.Template) (time.Time, bool) {
	d := timeoutOf(tmpl)
	if d <= 0 || attemptStarting(ta) {
		return time.Time{}, false
	}
	if start, ok := c.started.Load(attemptKey(ta)); ok {
		return start.(time.Time).Add(d), true
	}
	h := ta.Status.PhaseHistory
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Phase == v1.ReasonInitializing {
			return h[i].OccurredAt.Add(time.Second + d), true
		}
	}
	return time.Time{}, false
}

func attemptKey(ta *v1.TaskAction) string {
	return string(ta.UID) + "/" + strconv.Itoa(int(ta.Status.Attempts))
}

func timeoutOf(tmpl plugins.Template) time.Duration {
	d, _ := time.ParseDuration(tmpl.Metadata.Timeout)
	return d
}

func parseTemplate(ta *v1.TaskAction) (plugins.Template, error) {
	var t plugins.Template
	if len(ta.Spec.TaskTemplate) > 0 {
		if err := json.Unmarshal(ta.Spec.TaskTemplate, &t); err != nil {
			return t, fmt.Errorf("task template: %w", err)
		}
	}
	if t.Type == "" {
		t.Type = ta.Spec.TaskType
	}
	if t.Type != ta.Spec.TaskType {
		return t, fmt.Errorf("task template type %q differs from the action's task type %q", t.Type, ta.Spec.TaskType)
	}
	if t.Metadata.Timeout != "" {
		if d, err := time.ParseDuration(t.Metadata.Timeout); err != nil || d <= 0 {
			return t, fmt.Errorf("metadata.timeout %q is not a positive duration", t.Metadata.Timeout)
		}
	}
	if t.Metadata.Retries < 0 {
		return t, fmt.Errorf("metadata.retries must not be negative")
	}
	return t, nil
}

func rv(ta *v1.TaskAction) uint64 {
	n, _ := strconv.ParseUint(ta.ResourceVersion, 10, 64)
	return n
}

func errorCode(tr plugins.Transition, fallback string) string {
	if tr.Error != nil && tr.Error.Code != "" {
		return tr.Error.Code
	}
	return fallback
}

func errorMessage(tr plugins.Transition) string {
	if tr.Error != nil && tr.Error.Message != "" {
		return tr.Error.Message
	}
	return tr.Info
}
