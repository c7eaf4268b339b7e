// Package echo is the echo plugin: it succeeds at once, and its outputs are
// its inputs.
package echo

import (
	"context"

	"taskactions/internal/executor/plugins"
)

// Plugin is the echo plugin.
type Plugin struct{}

// Handle succeeds, with the inputs as outputs.
func (Plugin) Handle(_ context.Context, tc *plugins.TaskContext) (plugins.Transition, error) {
	return plugins.Transition{
		Phase:   plugins.PhaseSuccess,
		Info:    "echoed the inputs",
		Outputs: map[string]string{"inputUri": tc.InputURI},
	}, nil
}

// Abort has nothing to stop.
func (Plugin) Abort(context.Context, *plugins.TaskContext) error { return nil }

// Finalize has nothing to release.
func (Plugin) Finalize(context.Context, *plugins.TaskContext) error { return nil }

// HoldsNothing: an attempt is its rounds, and its state is in the status.
func (Plugin) HoldsNothing() {}
