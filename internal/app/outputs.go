package app

import (
	"context"
	"errors"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/outputs"
)

// runOutputSweeper removes the output dirs of deleted runs from this
// replica's disk (package outputs), every --output-sweep.
func (a *App) runOutputSweeper(ctx context.Context) error {
	if a.cfg.OutputSweep <= 0 {
		<-ctx.Done()
		return nil
	}
	return outputs.New(outputs.Config{
		Root: a.outputRoot(), Runs: heldRuns{a}, Every: a.cfg.OutputSweep, Log: a.component("outputs"),
	}).Run(ctx)
}

// heldRuns: a run exists while the control plane or history holds any of
// its actions.
type heldRuns struct{ a *App }

func (h heldRuns) Exists(ctx context.Context, id v1.RunID) (bool, error) {
	live, err := h.a.mgr.ListRunActions(ctx, id)
	if err != nil || len(live) > 0 {
		return len(live) > 0, err
	}
	_, err = h.a.runs.Get(ctx, id)
	if errors.Is(err, history.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
