package rules

import (
	"math"
	"testing"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// Rollouts' EvaluateResult (utils/evaluate/evaluate.go and its tests):
// the phase a value gets under the metric's conditions, and the error
// messages of a condition that cannot be evaluated.
func TestEvaluate(t *testing.T) {
	one := 1.0
	var nilFloat *float64
	const (
		ok   = rolloutsapi.AnalysisPhaseSuccessful
		fail = rolloutsapi.AnalysisPhaseFailed
		inc  = rolloutsapi.AnalysisPhaseInconclusive
		erro = rolloutsapi.AnalysisPhaseError
	)
	apdex := map[string]any{"service_apdex": map[string]any{"label": nil,
		"values": map[string]any{"values": []any{float64(2), float64(2)}}}}
	for _, tc := range []struct {
		name             string
		success, failure string
		value            any
		want             rolloutsapi.AnalysisPhase
		err              string
	}{
		// which phase, by the conditions given
		{"no conditions", "", "", true, ok, ""},
		{"success holds", "true", "", true, ok, ""},
		{"success does not hold: failed", "false", "", true, fail, ""},
		{"failure holds", "", "true", true, fail, ""},
		{"failure does not hold: successful", "", "false", true, ok, ""},
		{"both, failure holds", "true", "true", true, fail, ""},
		{"both, success holds", "true", "false", true, ok, ""},
		{"both, neither holds: inconclusive", "false", "false", true, inc, ""},

		// expressions on the value
		{"result == true", "result == true", "", true, ok, ""},
		{"a number", "result > 1", "", float64(5), ok, ""},
		{"a vector", "result[0] >= 0.95", "", []any{0.97}, ok, ""},
		{"a vector below", "result[0] >= 0.95", "", []any{0.5}, fail, ""},
		{"all() on a map", "all(result.service_apdex.values.values, {# > 1})", "", apdex, ok, ""},
		{"in", "2 in result", "", []float64{2, 2}, ok, ""},
		{"a pointer is dereferenced", "result == 1", "", &one, ok, ""},

		// Rollouts' functions
		{"asInt of a string", "asInt(result) == 1", "", "1", ok, ""},
		{"asInt truncates", "asInt(result) == 1", "", 1.123, ok, ""},
		{"asFloat of a string", "asFloat(result) == 1.1", "", "1.1", ok, ""},
		{"asFloat of an int", "asFloat(result) >= 1", "", 1, ok, ""},
		{"isNaN", "isNaN(result)", "", math.NaN(), ok, ""},
		{"isInf", "isInf(result)", "", math.Inf(-1), ok, ""},
		{"isNil of a nil pointer", "isNil(result)", "", nilFloat, ok, ""},
		{"isNil of a value", "isNil(result)", "", 0.0, fail, ""},
		{"default of a nil pointer", "default(result, 0) == 0", "", nilFloat, ok, ""},
		{"default of a value", "default(result, 0) == 1", "", &one, ok, ""},

		// errors, with Rollouts' messages
		{"unknown name", "invalidVariable", "", true, erro,
			`could not evaluate successCondition "invalidVariable": unknown name invalidVariable`},
		{"failureCondition's error", "true", "invalidVar == true", true, erro,
			`could not evaluate failureCondition "invalidVar == true": unknown name invalidVar`},
		{"not a bool", "1", "", true, erro,
			`could not evaluate successCondition "1": expected bool, but got int`},
		{"asInt of a decimal string", "asInt(result) == 1", "", "1.1", erro,
			`could not evaluate successCondition "asInt(result) == 1": strconv.ParseInt: parsing "1.1": invalid syntax`},
		{"asFloat of a word", "asFloat(result) == 1.1", "", "NotANum", erro,
			`could not evaluate successCondition "asFloat(result) == 1.1": strconv.ParseFloat: parsing "NotANum": invalid syntax`},
		{"mismatched types", `asFloat(result) == "1.1"`, "", "1.1", erro,
			`could not evaluate successCondition "asFloat(result) == "1.1"": invalid operation: == (mismatched types float64 and string)`},
		{"nil result", "result[0] >= 0.95", "", nil, erro,
			`could not evaluate successCondition "result[0] >= 0.95": metric result is nil or empty: no data returned from the metric provider`},
		{"empty result", "result[0] >= 0.95", "", []float64{}, erro,
			`could not evaluate successCondition "result[0] >= 0.95": metric result is nil or empty: no data returned from the metric provider`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Evaluate(rolloutsapi.Metric{Name: "m", SuccessCondition: tc.success, FailureCondition: tc.failure}, tc.value)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if got != tc.want || msg != tc.err {
				t.Errorf("got %s, %q; want %s, %q", got, msg, tc.want, tc.err)
			}
		})
	}
}

func TestEvaluateHelpers(t *testing.T) {
	var nilFloat *float64
	var nilSlice []string
	one := 1.0
	for _, tc := range []struct {
		name      string
		in        any
		isNil     bool
		dereffed  any
		nilOrNone bool
	}{
		{"nil", nil, true, nil, true},
		{"nil pointer", nilFloat, true, nil, true},
		{"nil slice", nilSlice, true, nil, true},
		{"empty slice", []string{}, false, nil, true},
		{"empty array", [0]int{}, false, [0]int{}, true},
		{"pointer", &one, false, 1.0, false},
		{"value", false, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isNil(tc.in); got != tc.isNil {
				t.Errorf("isNil = %v", got)
			}
			if got := isNilOrEmpty(tc.in); got != tc.nilOrNone {
				t.Errorf("isNilOrEmpty = %v", got)
			}
			if tc.name != "empty slice" {
				if got := valueFromPointer(tc.in); got != tc.dereffed {
					t.Errorf("valueFromPointer = %#v, want %#v", got, tc.dereffed)
				}
			}
		})
	}
}
