package engine

import (
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

type ps = kargoapi.PromotionStep

// step builds a step with alias as and uses "task".
func step(as string, opts ...func(*ps)) ps {
	s := ps{Uses: "task", As: as}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func ifc(expr string) func(*ps) { return func(s *ps) { s.If = expr } }
func coe(s *ps)                 { s.ContinueOnError = true }
func cfg(json string) func(*ps) {
	return func(s *ps) { s.Config = &apiextensionsv1.JSON{Raw: []byte(json)} }
}
func svars(vs ...ev) func(*ps)                      { return func(s *ps) { s.Vars = vs } }
func uses(u string) func(*ps)                       { return func(s *ps) { s.Uses = u } }
func retry(r kargoapi.PromotionStepRetry) func(*ps) { return func(s *ps) { s.Retry = &r } }

// outcome is how a run step ends in a simulation.
type outcome struct {
	status  StepStatus
	msg     string
	outputs map[string]any
}

// simulate plays the orchestrator: it calls Decide until Finished, runs
// steps with the given outcomes (Succeeded by default), and returns the trace
// ("alias:run", "alias:skip", "alias:errored"), the records and the final
// decision.
type simResult struct {
	trace   []string
	done    []StepRecord
	final   Decision
	configs map[string]map[string]any
	runs    map[string]Decision
}

func simulate(t *testing.T, in Input, outcomes map[string]outcome) simResult {
	t.Helper()
	r := simResult{configs: map[string]map[string]any{}, runs: map[string]Decision{}}
	for n := 0; n < 100; n++ {
		in.Done = r.done
		d := Decide(in)
		switch {
		case d.Finished:
			r.final = d
			return r
		case d.Skip:
			r.trace = append(r.trace, d.Alias+":skip")
			r.done = append(r.done, StepRecord{Alias: d.Alias, Status: StepSkipped, Message: d.SkipReason})
		case d.Errored:
			r.trace = append(r.trace, d.Alias+":errored")
			r.done = append(r.done, StepRecord{Alias: d.Alias, Status: StepErrored, Message: d.Error})
		case d.Run:
			r.trace = append(r.trace, d.Alias+":run")
			r.configs[d.Alias] = d.Config
			r.runs[d.Alias] = d
			o, ok := outcomes[d.Alias]
			if !ok {
				o = outcome{status: StepSucceeded}
			}
			now := time.Unix(1700000000, 0)
			r.done = append(r.done, StepRecord{
				Alias: d.Alias, Status: o.status, Message: o.msg, Outputs: o.outputs,
				StartedAt: &now, FinishedAt: &now,
			})
		default:
			t.Fatalf("decision with nothing to do: %+v", d)
		}
		if d.Index != len(r.done)-1 {
			t.Fatalf("decision for index %d, expected %d", d.Index, len(r.done)-1)
		}
	}
	t.Fatal("no end")
	return r
}

// It reads better whole: its cases are one table, a line each.
func TestDecideScenarios(t *testing.T) {
	failed := outcome{status: StepFailed, msg: "boom"}
	errored := outcome{status: StepErrored, msg: "kaput"}
	tests := []struct {
		name      string
		steps     []ps
		outcomes  map[string]outcome
		trace     string
		phase     kargoapi.PromotionPhase
		message   string
		recordMsg map[string]string // alias -> message recorded
	}{
		{
			name:  "all succeed",
			steps: []ps{step("a"), step("b"), step("c")},
			trace: "a:run b:run c:run", phase: "Succeeded",
		},
		{
			name:     "no if: skipped after a failure",
			steps:    []ps{step("a"), step("b"), step("c")},
			outcomes: map[string]outcome{"a": failed},
			trace:    "a:run b:skip c:skip", phase: "Failed", message: "boom",
			recordMsg: map[string]string{"b": "skipped because an earlier step failed or errored"},
		},
		{
			name:     "no if: skipped after an error",
			steps:    []ps{step("a"), step("b")},
			outcomes: map[string]outcome{"a": errored},
			trace:    "a:run b:skip", phase: "Errored", message: "kaput",
		},
		{
			name:     "continueOnError failure is not counted and triggers no skip",
			steps:    []ps{step("a", coe), step("b"), step("c", ifc("${{ success() }}")), step("d", ifc("${{ failure() }}"))},
			outcomes: map[string]outcome{"a": failed},
			trace:    "a:run b:run c:run d:skip", phase: "Succeeded",
		},
		{
			name:     "continueOnError error is not counted either",
			steps:    []ps{step("a", coe), step("b")},
			outcomes: map[string]outcome{"a": errored},
			trace:    "a:run b:run", phase: "Succeeded",
		},
		{
			name: "failure() cleanup runs after a failure; always() runs; success() does not",
			steps: []ps{
				step("a"), step("b"),
				step("cleanup", ifc("${{ failure() }}")),
				step("notify", ifc("${{ always() }}")),
				step("celebrate", ifc("${{ success() }}")),
			},
			outcomes: map[string]outcome{"a": failed},
			trace:    "a:run b:skip cleanup:run notify:run celebrate:skip", phase: "Failed", message: "boom",
		},
		{
			name:  "failure() cleanup is skipped when all is well",
			steps: []ps{step("a"), step("cleanup", ifc("${{ failure() }}")), step("notify", ifc("${{ always() }}"))},
			trace: "a:run cleanup:skip notify:run", phase: "Succeeded",
			recordMsg: map[string]string{"cleanup": `skipped because "${{ failure() }}" evaluated to false`},
		},
		{
			name: "cleanup that fails itself keeps the promotion Failed",
			steps: []ps{
				step("a"), step("cleanup", ifc("${{ failure() }}")),
			},
			outcomes: map[string]outcome{"a": failed, "cleanup": {status: StepFailed, msg: "cleanup failed"}},
			trace:    "a:run cleanup:run", phase: "Failed", message: "boom",
		},
		{
			name: "status('x') == 'Succeeded'",
			steps: []ps{
				step("x", coe), step("y", coe),
				step("after-x", ifc("${{ status('x') == 'Succeeded' }}")),
				step("after-y", ifc("${{ status('y') == 'Succeeded' }}")),
				step("y-failed", ifc("${{ status('y') == 'Failed' }}")),
				step("unknown", ifc("${{ status('nope') == '' }}")),
			},
			outcomes: map[string]outcome{"y": failed},
			trace:    "x:run y:run after-x:run after-y:skip y-failed:run unknown:run", phase: "Succeeded",
		},
		{
			name:  "non-boolean if is Errored, later always() still runs",
			steps: []ps{step("a"), step("b", ifc("${{ 'yes' }}")), step("c"), step("d", ifc("${{ always() }}"))},
			trace: "a:run b:errored c:skip d:run", phase: "Errored",
			message: `error checking if step "b" should be skipped: expression must evaluate to a boolean`,
		},
		{
			name:  "if without ${{ }} is not a boolean (as in Kargo)",
			steps: []ps{step("a", ifc("true"))},
			trace: "a:errored", phase: "Errored",
			message: `error checking if step "a" should be skipped: expression must evaluate to a boolean`,
		},
		{
			name:  "if that fails to evaluate is Errored",
			steps: []ps{step("a", ifc("${{ outputs.none.x }}"))},
			trace: "a:errored", phase: "Errored",
		},
		{
			name:  "if false skips; the promotion still succeeds",
			steps: []ps{step("a", ifc("${{ ctx.stage == 'dev' }}")), step("b")},
			trace: "a:skip b:run", phase: "Succeeded",
		},
		{
			name:     "if sees vars and outputs",
			steps:    []ps{step("a"), step("b", ifc("${{ outputs.a.n > 1 && vars.go == 'yes' }}"), svars(ev{Name: "go", Value: "yes"}))},
			outcomes: map[string]outcome{"a": {status: StepSucceeded, outputs: map[string]any{"n": 2}}},
			trace:    "a:run b:run", phase: "Succeeded",
		},
		{
			name:  "config error is Errored without running; always() still runs",
			steps: []ps{step("a", cfg(`{"x": "${{ outputs.none.y }}"}`)), step("b"), step("c", ifc("${{ always() }}"))},
			trace: "a:errored b:skip c:run", phase: "Errored",
		},
		{
			name:  "no uses is Errored",
			steps: []ps{step("a", uses(""))},
			trace: "a:errored", phase: "Errored", message: `step "a" has no uses`,
		},
		{
			name:     "worst status wins: Errored over Failed",
			steps:    []ps{step("a", ifc("${{ always() }}")), step("b", ifc("${{ always() }}")), step("c", ifc("${{ always() }}"))},
			outcomes: map[string]outcome{"a": failed, "b": errored},
			trace:    "a:run b:run c:run", phase: "Errored", message: "kaput",
		},
		{
			name:     "worst status wins: continueOnError Errored ignored, Failed counts",
			steps:    []ps{step("a", ifc("${{ always() }}")), step("b", coe, ifc("${{ always() }}"))},
			outcomes: map[string]outcome{"a": failed, "b": errored},
			trace:    "a:run b:run", phase: "Failed", message: "boom",
		},
		{
			name:  "only skips is Succeeded",
			steps: []ps{step("a", ifc("${{ false }}")), step("b", ifc("${{ false }}"))},
			trace: "a:skip b:skip", phase: "Succeeded",
		},
		{
			name:     "aborted step ends the promotion Aborted at once, no always()",
			steps:    []ps{step("a"), step("b", ifc("${{ always() }}"))},
			outcomes: map[string]outcome{"a": {status: StepAborted, msg: "Promotion terminated by bob"}},
			trace:    "a:run", phase: "Aborted", message: "Promotion terminated by bob",
		},
		{
			name:  "no steps",
			steps: nil,
			trace: "", phase: "Succeeded",
		},
		{
			name: "default aliases and status() inside a task",
			steps: []ps{
				{Uses: "task"}, // step-1
				{Uses: "task", As: "t::clone", ContinueOnError: true},
				{Uses: "task", As: "t::push", If: "${{ status('clone') == 'Failed' }}"},
				{Uses: "task", If: "${{ status('step-1') == 'Succeeded' }}"}, // step-4
			},
			outcomes: map[string]outcome{"t::clone": failed},
			trace:    "step-1:run t::clone:run t::push:run step-4:run", phase: "Succeeded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := simulate(t, Input{Steps: tt.steps, Ctx: testCtx}, tt.outcomes)
			if got := strings.Join(r.trace, " "); got != tt.trace {
				t.Errorf("trace = %q, want %q", got, tt.trace)
			}
			if r.final.Phase != tt.phase {
				t.Errorf("phase = %q (%q), want %q", r.final.Phase, r.final.Message, tt.phase)
			}
			if tt.message != "" && r.final.Message != tt.message {
				t.Errorf("message = %q, want %q", r.final.Message, tt.message)
			}
			for alias, want := range tt.recordMsg {
				for _, rec := range r.done {
					if rec.Alias == alias && rec.Message != want {
						t.Errorf("record %q message = %q, want %q", alias, rec.Message, want)
					}
				}
			}
		})
	}
}

func TestDecideConfigTemplating(t *testing.T) {
	steps := []ps{
		step("build"),
		step("deploy",
			uses("argocd-update"),
			svars(ev{Name: "image", Value: "${{ vars.repo }}:${{ outputs.build.tag }}"}),
			cfg(`{
				"image": "${{ vars.image }}",
				"tag": "${{ outputs.build.tag }}",
				"replicas": "${{ outputs.build.replicas }}",
				"labels": "${{ outputs.build.labels }}",
				"message": "deploying ${{ outputs.build.replicas }} of ${{ ctx.targetFreight.name }} to ${{ ctx.stage }}",
				"env": "${{ vars.env }}",
				"quoted": "${{ quote(outputs.build.replicas) }}",
				"buildStatus": "${{ status('build') }}",
				"when": "${{ stepMetas.build.Status }}"
			}`),
			retry(kargoapi.PromotionStepRetry{ErrorThreshold: 3, Timeout: &metav1.Duration{Duration: 5 * time.Minute}}),
		),
	}
	outcomes := map[string]outcome{"build": {status: StepSucceeded, outputs: map[string]any{
		"tag": "v1.2.3", "replicas": 3, "labels": map[string]any{"app": "web"},
	}}}
	r := simulate(t, Input{
		Steps: steps,
		Vars:  []ev{{Name: "repo", Value: "ghcr.io/acme/web"}, {Name: "env", Value: "${{ ctx.stage }}"}},
		Ctx:   testCtx,
	}, outcomes)
	if r.final.Phase != kargoapi.PromotionPhaseSucceeded {
		t.Fatalf("phase %q: %q", r.final.Phase, r.final.Message)
	}
	want := map[string]any{
		"image":       "ghcr.io/acme/web:v1.2.3",
		"tag":         "v1.2.3",
		"replicas":    3.0,
		"labels":      map[string]any{"app": "web"},
		"message":     "deploying 3 of 1234567abcdef to prod",
		"env":         "prod",
		"quoted":      "3",
		"buildStatus": "Succeeded",
		"when":        "Succeeded",
	}
	if got := r.configs["deploy"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("config =\n%#v\nwant\n%#v", got, want)
	}
	d := r.runs["deploy"]
	if d.Uses != "argocd-update" || d.Retries != 2 || d.Timeout != 5*time.Minute {
		t.Fatalf("run decision = %+v", d)
	}
	if b := r.runs["build"]; b.Config != nil || b.Retries != 0 || b.Timeout != 0 {
		t.Fatalf("build decision = %+v", b)
	}
}

func TestDecideConfigErrorMessage(t *testing.T) {
	d := Decide(Input{Steps: []ps{step("a", cfg(`{"x": "${{ outputs.none.y }}"}`))}, Ctx: testCtx})
	if !d.Errored || d.Index != 0 || d.Alias != "a" {
		t.Fatalf("decision = %+v", d)
	}
	for _, w := range []string{
		"an unrecoverable error occurred: failed to get step config:",
		"config field x", `"outputs.none.y"`,
	} {
		if !strings.Contains(d.Error, w) {
			t.Errorf("error %q does not contain %q", d.Error, w)
		}
	}
	// A step var that fails surfaces the same way.
	d = Decide(Input{Steps: []ps{step("a", cfg(`{}`), svars(ev{Name: "v", Value: "${{ 1 + }}"}))}, Ctx: testCtx})
	if !d.Errored || !strings.Contains(d.Error, `error pre-processing promotion variable "v"`) {
		t.Fatalf("decision = %+v", d)
	}
	// A step with neither if nor config never evaluates its vars (as in Kargo).
	d = Decide(Input{Steps: []ps{step("a", svars(ev{Name: "v", Value: "${{ 1 + }}"}))}, Ctx: testCtx})
	if !d.Run {
		t.Fatalf("decision = %+v", d)
	}
}

func TestDecideRecords(t *testing.T) {
	steps := []ps{step("a"), step("b")}
	tests := []struct {
		name string
		done []StepRecord
		want Decision
	}{
		{"running record: wait", []StepRecord{{Alias: "a", Status: StepRunning}},
			Decision{Waiting: true, Index: 0, Alias: "a"}},
		{"empty alias is accepted", []StepRecord{{Status: StepSucceeded}},
			Decision{Run: true, Index: 1, Alias: "b", Uses: "task"}},
		{"too many records", []StepRecord{{Status: StepSucceeded}, {Status: StepSucceeded}, {Status: StepSucceeded}},
			Decision{Finished: true, Phase: "Errored", Message: "3 step records for 2 steps"}},
		{"wrong alias", []StepRecord{{Alias: "b", Status: StepSucceeded}},
			Decision{Finished: true, Phase: "Errored", Message: `step record 0 is for step "b", but step 0 is "a"`}},
		{"unknown status", []StepRecord{{Alias: "a", Status: "Weird"}},
			Decision{Finished: true, Phase: "Errored", Message: `step "a" has an unknown status "Weird"`}},
		{"aborted without message", []StepRecord{{Alias: "a", Status: StepAborted}},
			Decision{Finished: true, Phase: "Aborted", Message: `step "a" was aborted`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(Input{Steps: steps, Done: tt.done})
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// After an abort no step runs, even when the step in flight ended
// Succeeded because the abort reached it too late: the Promotion ends
// Aborted once that step's end is recorded. (Deciding the next step
// instead kept an aborted Promotion Running for good: its run took no
// more steps.)
func TestDecideAfterAbort(t *testing.T) {
	steps := []ps{step("a"), step("b")}
	const stop = "Promotion aborted"
	tests := []struct {
		name string
		done []StepRecord
		want Decision
	}{
		{"nothing decided", nil, Decision{Finished: true, Phase: "Aborted", Message: stop}},
		{"a step in flight: wait for it", []StepRecord{{Alias: "a", Status: StepRunning}},
			Decision{Waiting: true, Index: 0, Alias: "a"}},
		{"it ended Succeeded: b does not run", []StepRecord{{Alias: "a", Status: StepSucceeded}},
			Decision{Finished: true, Phase: "Aborted", Message: stop}},
		{"it ended Aborted", []StepRecord{{Alias: "a", Status: StepAborted, Message: "aborted by the abort"}},
			Decision{Finished: true, Phase: "Aborted", Message: "aborted by the abort"}},
		{"every step had ended", []StepRecord{{Alias: "a", Status: StepSucceeded}, {Alias: "b", Status: StepSucceeded}},
			Decision{Finished: true, Phase: "Succeeded"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(Input{Steps: steps, Done: tt.done, Aborted: stop})
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDecideIsPure(t *testing.T) {
	in := Input{
		Steps: []ps{step("a"), step("b", cfg(`{"t": "${{ outputs.a.t }}"}`))},
		Ctx:   testCtx,
		Done:  []StepRecord{{Alias: "a", Status: StepSucceeded, Outputs: map[string]any{"t": "x"}}},
	}
	first := Decide(in)
	second := Decide(in)
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("%+v != %+v", first, second)
	}
	if string(in.Steps[1].Config.Raw) != `{"t": "${{ outputs.a.t }}"}` || in.Done[0].Outputs["t"] != "x" {
		t.Fatal("Decide modified its input")
	}
}

func TestFinalPhase(t *testing.T) {
	rec := func(s StepStatus, msg string) StepRecord { return StepRecord{Status: s, Message: msg} }
	tests := []struct {
		name  string
		steps []ps
		done  []StepRecord
		phase kargoapi.PromotionPhase
		msg   string
	}{
		{"empty", nil, nil, "Succeeded", ""},
		{"succeeded and skipped", []ps{{}, {}}, []StepRecord{rec(StepSucceeded, ""), rec(StepSkipped, "why")}, "Succeeded", ""},
		{"aborted", []ps{{}, {}, {}}, []StepRecord{rec(StepSucceeded, ""), rec(StepSkipped, ""), rec(StepAborted, "stop")}, "Aborted", "stop"},
		{"failed over aborted", []ps{{}, {}}, []StepRecord{rec(StepAborted, "stop"), rec(StepFailed, "f")}, "Failed", "f"},
		{"errored over failed", []ps{{}, {}}, []StepRecord{rec(StepErrored, "e"), rec(StepFailed, "f")}, "Errored", "e"},
		{"first of equals keeps its message", []ps{{}, {}}, []StepRecord{rec(StepFailed, "f1"), rec(StepFailed, "f2")}, "Failed", "f1"},
		{"running is Errored", []ps{{}}, []StepRecord{rec(StepRunning, "r")}, "Errored", "r"},
		{"continueOnError excluded", []ps{{ContinueOnError: true}, {}}, []StepRecord{rec(StepErrored, "e"), rec(StepSucceeded, "")}, "Succeeded", ""},
		{"unknown status is Errored", []ps{{}}, []StepRecord{rec("Weird", "w")}, "Errored", "w"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			phase, msg := FinalPhase(tt.steps, tt.done)
			if phase != tt.phase || msg != tt.msg {
				t.Fatalf("FinalPhase = %q, %q; want %q, %q", phase, msg, tt.phase, tt.msg)
			}
		})
	}
}

func TestHasFailures(t *testing.T) {
	steps := []ps{{ContinueOnError: true}, {}}
	if HasFailures(steps, []StepRecord{{Status: StepFailed}, {Status: StepSucceeded}}) {
		t.Error("continueOnError failure counted")
	}
	if !HasFailures(steps, []StepRecord{{Status: StepSucceeded}, {Status: StepErrored}}) {
		t.Error("error not counted")
	}
	if HasFailures(steps, []StepRecord{{Status: StepSkipped}, {Status: StepAborted}}) {
		t.Error("skipped/aborted counted")
	}
}
