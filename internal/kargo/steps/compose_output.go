package steps

import (
	"context"
	"maps"
)

// outputComposer is compose-output (Kargo's output_composer.go): its
// config, evaluated, is its output. (Kargo also copies it into the
// task's outputs when the step is part of a PromotionTask; PromotionTasks
// are not served here.)
type outputComposer struct{}

func (outputComposer) Name() string { return "compose-output" }

func (c outputComposer) Run(_ context.Context, sc *StepContext) (Result, error) {
	if err := validate(c.Name(), sc.Config); err != nil {
		return errored(err)
	}
	return succeeded(maps.Clone(sc.Config))
}
