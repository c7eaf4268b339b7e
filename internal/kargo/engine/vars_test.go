package engine

import (
	"reflect"
	"strings"
	"testing"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

type ev = kargoapi.ExpressionVariable

var testCtx = Context{
	Project:   "proj",
	Promotion: "prod.01abc.1234567",
	Stage:     "prod",
	Actor:     "alice",
	TargetFreight: FreightRef{
		Name:   "1234567abcdef",
		Origin: kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "wh"},
	},
}

func TestPromotionVars(t *testing.T) {
	tests := []struct {
		name string
		vars []ev
		want map[string]any
	}{
		{"plain values stay strings", []ev{{Name: "n", Value: "3"}}, map[string]any{"n": "3"}},
		{"each var sees earlier vars", []ev{
			{Name: "a", Value: "x"},
			{Name: "b", Value: "${{ vars.a }}-y"},
			{Name: "c", Value: "${{ vars.b }}-z"},
		}, map[string]any{"a": "x", "b": "x-y", "c": "x-y-z"}},
		{"a later var is not visible yet", []ev{
			{Name: "a", Value: "${{ vars.b }}"},
			{Name: "b", Value: "x"},
		}, map[string]any{"a": nil, "b": "x"}},
		{"ctx is visible", []ev{
			{Name: "where", Value: "${{ ctx.project }}/${{ ctx.stage }}/${{ ctx.promotion }}"},
			{Name: "who", Value: "${{ ctx.meta.promotion.actor }}"},
			{Name: "freight", Value: "${{ ctx.targetFreight.name }}@${{ ctx.targetFreight.origin.name }}"},
			{Name: "kind", Value: "${{ ctx.targetFreight.origin.kind }}"},
		}, map[string]any{
			"where":   "proj/prod/prod.01abc.1234567",
			"who":     "alice",
			"freight": "1234567abcdef@wh",
			"kind":    "Warehouse",
		}},
		{"outputs are not visible", []ev{{Name: "o", Value: "${{ outputs }}"}}, map[string]any{"o": nil}},
		{"a redefined var overrides", []ev{
			{Name: "a", Value: "1"},
			{Name: "a", Value: "${{ vars.a }}2"},
		}, map[string]any{"a": 12.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PromotionVars(tt.vars, testCtx)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestStepVars(t *testing.T) {
	done := []StepRecord{{Alias: "build", Status: StepSucceeded, Outputs: map[string]any{"tag": "v2"}}}
	promoVars := []ev{{Name: "tag", Value: "v1"}, {Name: "repo", Value: "ghcr.io/x"}}
	step := kargoapi.PromotionStep{Vars: []ev{
		{Name: "tag", Value: "${{ outputs.build.tag }}"},           // overrides, uses outputs
		{Name: "image", Value: "${{ vars.repo }}:${{ vars.tag }}"}, // sees promotion vars and earlier step vars
		{Name: "state", Value: "${{ stepMetas.build.Status }}"},
	}}
	got, err := StepVars(promoVars, step, "deploy", testCtx, done)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"tag": "v2", "repo": "ghcr.io/x", "image": "ghcr.io/x:v2", "state": "Succeeded"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v, want %#v", got, want)
	}

	// Promotion vars never see outputs, even when a step's do.
	_, err = StepVars([]ev{{Name: "o", Value: "${{ outputs.build.tag }}"}}, kargoapi.PromotionStep{}, "deploy", testCtx, done)
	if err == nil || !strings.Contains(err.Error(), "cannot fetch build from <nil>") {
		t.Fatalf("promotion var saw outputs: %v", err)
	}
}

func TestVarsErrors(t *testing.T) {
	_, err := PromotionVars([]ev{{Name: "bad", Value: "${{ 1 + }}"}}, testCtx)
	if err == nil || !strings.Contains(err.Error(), `error pre-processing promotion variable "bad"`) ||
		!strings.Contains(err.Error(), `"1 +"`) {
		t.Fatalf("err = %v", err)
	}
	_, err = StepVars(nil, kargoapi.PromotionStep{Vars: []ev{{Name: "s", Value: "${{ outputs.x.y }}"}}}, "a", testCtx, nil)
	if err == nil || !strings.Contains(err.Error(), `variable "s"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestStepEnvTaskOutputs(t *testing.T) {
	done := []StepRecord{
		{Alias: "t::clone", Status: StepSucceeded, Outputs: map[string]any{"commit": "abc"}},
		{Alias: "other::clone", Status: StepSucceeded, Outputs: map[string]any{"commit": "zzz"}},
		{Alias: "plain", Status: StepSucceeded, Outputs: map[string]any{"x": 1}},
		{Alias: "skipped", Status: StepSkipped},
	}
	env := StepEnv(testCtx, "t::push", map[string]any{}, done)
	task, _ := env["task"].(map[string]any)
	want := map[string]any{"clone": map[string]any{"commit": "abc"}}
	if !reflect.DeepEqual(task["outputs"], want) {
		t.Fatalf("task.outputs = %#v, want %#v", task["outputs"], want)
	}
	if _, ok := env["outputs"].(map[string]any)["skipped"]; ok {
		t.Fatal("a step without outputs has an outputs key")
	}
	if _, ok := StepEnv(testCtx, "plain2", nil, done)["task"]; ok {
		t.Fatal("a step outside a task has task.outputs")
	}
}
