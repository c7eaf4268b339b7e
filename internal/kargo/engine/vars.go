package engine

import (
	"fmt"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// aliasSeparator separates a task's alias from one of its steps' aliases in
// the alias of a step inflated from a PromotionTask ("<task>::<step>"); the
// same as kargoapi.PromotionAliasSeparator (kept here so this package does
// not depend on that newer constant).
const aliasSeparator = "::"

// PromotionVars evaluates the promotion-level vars in order. Each value is a
// template (see EvaluateTemplate) evaluated with the env {ctx, vars}: vars
// holds the vars evaluated before it (vars.<name>); outputs are not
// visible. A later var with the same name overrides an earlier one.
//
// opts are further functions (Kargo's freight functions, FreightFunctions).
func PromotionVars(vars []kargoapi.ExpressionVariable, c Context, opts ...expr.Option) (map[string]any, error) {
	out := make(map[string]any, len(vars))
	env := map[string]any{"ctx": c.env(), "vars": out}
	for _, v := range vars {
		val, err := EvaluateTemplate(v.Value, env, opts...)
		if err != nil {
			return nil, fmt.Errorf("error pre-processing promotion variable %q: %w", v.Name, err)
		}
		out[v.Name] = val
	}
	return out, nil
}

// StepVars returns the vars a step sees (Kargo's Step.GetVars): the
// promotion vars (PromotionVars), then the step's own vars evaluated in order
// with the step env {ctx, vars, outputs, task.outputs, stepMetas} (see
// StepEnv), where vars holds the promotion vars and the step vars before it.
// Step vars override promotion vars of the same name. done is what is known
// of the steps before this one.
func StepVars(
	promoVars []kargoapi.ExpressionVariable,
	step kargoapi.PromotionStep,
	alias string,
	c Context,
	done []StepRecord,
	opts ...expr.Option,
) (map[string]any, error) {
	vars, err := PromotionVars(promoVars, c, opts...)
	if err != nil {
		return nil, err
	}
	if len(step.Vars) == 0 {
		return vars, nil
	}
	// As in Kargo, step vars get no status functions (success() etc.).
	env := StepEnv(c, alias, vars, done)
	for _, v := range step.Vars {
		val, err := EvaluateTemplate(v.Value, env, opts...)
		if err != nil {
			return nil, fmt.Errorf("error pre-processing promotion variable %q: %w", v.Name, err)
		}
		vars[v.Name] = val
	}
	return vars, nil
}

// StepEnv is the expression environment of a step's `if`, step vars and
// config (Kargo's Step.BuildEnv with all options):
//
//	ctx:       {project, promotion, stage,
//	            targetFreight: {name, origin: {kind, name}},
//	            meta: {promotion: {actor}}}
//	vars:      vars (the map itself, so vars added later are visible)
//	outputs:   Outputs(done): earlier steps' outputs by alias
//	task:      {outputs: ...} only for a step inflated from a task
//	           ("<task>::<step>"): the outputs of the task's other steps by
//	           their short alias
//	stepMetas: earlier steps' records by alias, as
//	           kargoapi.StepExecutionMetadata (fields Status, Message,
//	           StartedAt, FinishedAt, ErrorCount, ...)
func StepEnv(c Context, alias string, vars map[string]any, done []StepRecord) map[string]any {
	outputs := Outputs(done)
	metas := make(map[string]any, len(done))
	for _, r := range done {
		metas[r.Alias] = r.metadata()
	}
	env := map[string]any{
		"ctx":       c.env(),
		"vars":      vars,
		"outputs":   outputs,
		"stepMetas": metas,
	}
	if ns := aliasNamespace(alias); ns != "" {
		taskOutputs := map[string]any{}
		for k, v := range outputs {
			if aliasNamespace(k) == ns {
				taskOutputs[k[len(ns)+len(aliasSeparator):]] = v
			}
		}
		env["task"] = map[string]any{"outputs": taskOutputs}
	}
	return env
}

// Outputs is the promotion's shared state as Kargo keeps it: each earlier
// step's outputs keyed by its alias (outputs.<alias>.<key>). Steps without
// outputs (skipped, errored before running, or producing none) have no key.
func Outputs(done []StepRecord) map[string]any {
	out := make(map[string]any, len(done))
	for _, r := range done {
		if r.Outputs != nil {
			out[r.Alias] = r.Outputs
		}
	}
	return out
}

// env is the `ctx` entry of an expression environment.
func (c Context) env() map[string]any {
	return map[string]any{
		"project":   c.Project,
		"promotion": c.Promotion,
		"stage":     c.Stage,
		"targetFreight": map[string]any{
			"name": c.TargetFreight.Name,
			"origin": map[string]any{
				"kind": string(c.TargetFreight.Origin.Kind),
				"name": c.TargetFreight.Origin.Name,
			},
		},
		"meta": map[string]any{
			"promotion": map[string]any{"actor": c.Actor},
		},
	}
}

// metadata is the record as Kargo's StepExecutionMetadata (stepMetas).
func (r StepRecord) metadata() kargoapi.StepExecutionMetadata {
	toMeta := func(t *time.Time) *metav1.Time {
		if t == nil {
			return nil
		}
		return &metav1.Time{Time: *t}
	}
	return kargoapi.StepExecutionMetadata{
		Alias:      r.Alias,
		StartedAt:  toMeta(r.StartedAt),
		FinishedAt: toMeta(r.FinishedAt),
		ErrorCount: r.ErrorCount,
		Status:     r.Status,
		Message:    r.Message,
	}
}

// aliasNamespace is the task part of "<task>::<step>", or "".
func aliasNamespace(alias string) string {
	parts := strings.Split(alias, aliasSeparator)
	if len(parts) != 2 {
		return ""
	}
	return parts[0]
}

// statusFunctions are success(), failure(), always() and status(alias) for
// the `if` and config of the step `alias` (Kargo's StatusOperations).
// failure() is true when an earlier step that is not continueOnError Failed
// or Errored; success() is its negation; status('x') is the status of the
// earlier step x ("Succeeded", "Failed", ...; "" if x has not run), where
// inside a task x is the short alias of a step of the same task.
func statusFunctions(alias string, steps []kargoapi.PromotionStep, done []StepRecord) []expr.Option {
	failed := HasFailures(steps, done)
	ns := aliasNamespace(alias)
	return []expr.Option{
		expr.Function("always", func(...any) (any, error) { return true, nil }, new(func() bool)),
		expr.Function("failure", func(...any) (any, error) { return failed, nil }, new(func() bool)),
		expr.Function("success", func(...any) (any, error) { return !failed, nil }, new(func() bool)),
		expr.Function("status", func(a ...any) (any, error) {
			want, _ := a[0].(string)
			if want == "" {
				return "", fmt.Errorf("argument must not be empty")
			}
			for _, r := range done {
				short, rns := r.Alias, ""
				if parts := strings.Split(r.Alias, aliasSeparator); len(parts) == 2 {
					rns, short = parts[0], parts[1]
				}
				if rns == ns && short == want {
					return string(r.Status), nil
				}
			}
			return "", nil
		}, new(func(string) string)),
	}
}
