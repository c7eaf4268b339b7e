// Package sleep is the sleep plugin: it waits custom.duration, then
// succeeds. It is for demos and load tests that need time to pass without
// running processes. The end time is in the plugin state, so a restarted
// server finishes the sleep on time.
package sleep

import (
	"context"
	"fmt"
	"time"

	"taskactions/internal/executor/plugins"
)

// Plugin is the sleep plugin.
type Plugin struct {
	Now func() time.Time
}

// State is the persisted plugin state.
type State struct {
	Until time.Time
}

const stateVersion = 1

// Handle starts or continues the sleep.
func (p Plugin) Handle(_ context.Context, tc *plugins.TaskContext) (plugins.Transition, error) {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	var st State
	if _, ok, err := tc.LoadState(&st); err != nil {
		return plugins.Transition{}, err
	} else if !ok {
		d, err := duration(tc.Template.Custom)
		if err != nil {
			return plugins.Transition{Phase: plugins.PhasePermanentFailure, Error: &plugins.ExecutionError{Code: "InvalidDuration", Message: err.Error()}}, nil
		}
		st.Until = now().Add(d)
		return plugins.Transition{Phase: plugins.PhaseRunning, Version: 1, Info: "sleeping until " + st.Until.UTC().Format(time.RFC3339Nano),
			State: st, StateVersion: stateVersion, RequeueAfter: d}, nil
	}
	if left := st.Until.Sub(now()); left > 0 {
		return plugins.Transition{Phase: plugins.PhaseRunning, Version: 1, Info: "sleeping until " + st.Until.UTC().Format(time.RFC3339Nano), RequeueAfter: left}, nil
	}
	return plugins.Transition{Phase: plugins.PhaseSuccess, Info: "slept"}, nil
}

func duration(custom map[string]any) (time.Duration, error) {
	s, _ := custom["duration"].(string)
	if s == "" {
		return 0, fmt.Errorf(`sleep needs custom.duration, such as "2s"`)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("custom.duration %q is not a duration", s)
	}
	return d, nil
}

// Abort has nothing to stop.
func (Plugin) Abort(context.Context, *plugins.TaskContext) error { return nil }

// Finalize has nothing to release.
func (Plugin) Finalize(context.Context, *plugins.TaskContext) error { return nil }

// HoldsNothing: an attempt is its rounds, and its state is in the status.
func (Plugin) HoldsNothing() {}
