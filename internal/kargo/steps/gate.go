package steps

import (
	"fmt"
	"sync"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/kargo/promotions"
)

// Gate holds back every round of a Promotion's step action, whatever its
// task type (a built-in step, http, sleep, process), until the
// orchestrator has decided it: the action is step i of the Promotion's
// current start (promotions.StepAction), recorded Running in its status,
// and the Promotion's working directory is on this disk. The executor asks
// it before each round (executor.Config.Admit).
//
// Two kinds of action wait here. One the executor saw before the
// Promotion's cache showed it decided: the orchestrator records a step
// before it enqueues its action. And one of a Promotion about to start
// over: a step in flight when its replica died, resumed by the executor
// that took over, whose working directory was lost with that replica.
// The orchestrator aborts it; without the gate it would run once more
// first (an http step would call its service again). An action still
// held after patience is refused: it is no step anyone decided.
//
// Only the children of a Promotion's root action (domain
// promotions.Domain, parent promotions.RootAction) named as steps are the
// gate's: it admits every other action.
type Gate struct {
	promotions Promotions
	dirs       Dirs
	patience   time.Duration

	mu      sync.Mutex
	waiting map[string]time.Time // attempt (plugins.AttemptKey): held since
}

// NewGate returns the gate of the Promotions' step actions.
func NewGate(p Promotions, d Dirs) *Gate {
	return &Gate{promotions: p, dirs: d, patience: 30 * time.Second, waiting: map[string]time.Time{}}
}

// Admit says whether a round of the action may run: "" and nil when it
// may, a reason to wait, or the refusal of an action that never will.
func (g *Gate) Admit(tc *plugins.TaskContext) (wait string, refused *plugins.ExecutionError) {
	if tc.Domain != promotions.Domain || tc.Parent != promotions.RootAction {
		return "", nil
	}
	if _, _, ok := promotions.ParseStepAction(tc.Action); !ok {
		return "", nil
	}
	wait, err := g.check(tc)
	if wait == "" {
		g.forget(tc)
		return "", nil
	}
	if g.held(tc) < g.patience {
		return wait, nil
	}
	g.forget(tc)
	return "", &plugins.ExecutionError{Code: "NotAPromotionStep", Message: err.Error()}
}

// check is why the step may not run yet ("" when it may), with the error
// it becomes once the gate's patience is out.
func (g *Gate) check(tc *plugins.TaskContext) (string, error) {
	if _, _, err := decidedStep(g.promotions, tc); err != nil {
		return "waiting for the Promotion to record the step", err
	}
	if ok, err := g.dirs.Exists(tc.Project, tc.Run); err != nil || !ok {
		if err == nil {
			err = errNoWorkDir
		}
		return "waiting for the Promotion's working directory", fmt.Errorf("the Promotion's working directory: %w", err)
	}
	return "", nil
}

// decidedStep is the Promotion whose step i tc's action is, when the
// orchestrator decided it: step i of the Promotion's current start,
// recorded Running; an error saying why not otherwise.
func decidedStep(ps Promotions, tc *plugins.TaskContext) (*kargoapi.Promotion, int, error) {
	i, start, ok := promotions.ParseStepAction(tc.Action)
	p := ps.OfRun(tc.Project, tc.Run)
	if !ok || p == nil || !decided(p, i) {
		return nil, 0, fmt.Errorf("action %s of run %s is not a running step of a Promotion", tc.Action, tc.Run)
	}
	if cur := promotions.StartOf(p); start != cur {
		return nil, 0, fmt.Errorf("action %s of run %s is a step of the Promotion's start %d, not of the one running (start %d)", tc.Action, tc.Run, start, cur)
	}
	return p, i, nil
}

// decided: p's records leave step i Running.
func decided(p *kargoapi.Promotion, i int) bool {
	md := p.Status.StepExecutionMetadata
	return i < len(p.Spec.Steps) && i < len(md) && md[i].Status == kargoapi.PromotionStepStatusRunning
}

// held is how long the attempt has been held back.
func (g *Gate) held(tc *plugins.TaskContext) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	k := plugins.AttemptKey(tc)
	since, ok := g.waiting[k]
	if !ok {
		// An attempt aborted while held is never asked about again: what
		// no one asked about for twice the patience goes.
		for k, t := range g.waiting {
			if time.Since(t) > 2*g.patience {
				delete(g.waiting, k)
			}
		}
		since = time.Now()
		g.waiting[k] = since
	}
	return time.Since(since)
}

func (g *Gate) forget(tc *plugins.TaskContext) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.waiting, plugins.AttemptKey(tc))
}
