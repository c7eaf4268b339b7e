package rules

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// Evaluate is Rollouts' EvaluateResult (utils/evaluate): the phase of a
// measured value under the metric's successCondition and
// failureCondition, expr-lang expressions in which `result` is the value
// (a pointer is dereferenced, a nil one is nil) and asInt, asFloat,
// isNaN, isInf, isNil and default are Rollouts' functions.
//
//   - neither condition: Successful;
//   - only successCondition: Successful if it holds, else Failed;
//   - only failureCondition: Failed if it holds, else Successful;
//   - both: Failed if failureCondition holds, else Successful if
//     successCondition does, else Inconclusive.
//
// A condition that does not compile, fails, or is not a bool makes the
// phase Error, with Rollouts' message: `could not evaluate
// successCondition "<expr>": <why>`, or, when the value is nil or an
// empty slice or array, `could not evaluate successCondition "<expr>":
// metric result is nil or empty: no data returned from the metric
// provider`.
func Evaluate(metric rolloutsapi.Metric, value any) (rolloutsapi.AnalysisPhase, error) {
	success, failure := false, false
	var err error
	if metric.SuccessCondition != "" {
		if success, err = evalCondition(value, metric.SuccessCondition); err != nil {
			return rolloutsapi.AnalysisPhaseError, evalError(err, "successCondition", metric.SuccessCondition, value)
		}
	}
	if metric.FailureCondition != "" {
		if failure, err = evalCondition(value, metric.FailureCondition); err != nil {
			return rolloutsapi.AnalysisPhaseError, evalError(err, "failureCondition", metric.FailureCondition, value)
		}
	}
	switch {
	case metric.SuccessCondition == "" && metric.FailureCondition == "":
		return rolloutsapi.AnalysisPhaseSuccessful, nil
	case metric.FailureCondition == "":
		failure = !success
	case metric.SuccessCondition == "":
		success = !failure
	}
	switch {
	case failure:
		return rolloutsapi.AnalysisPhaseFailed, nil
	case !success:
		return rolloutsapi.AnalysisPhaseInconclusive, nil
	}
	return rolloutsapi.AnalysisPhaseSuccessful, nil
}

// evalError is Rollouts' formatEvalError.
func evalError(err error, condition, expression string, value any) error {
	if isNilOrEmpty(value) {
		return fmt.Errorf("could not evaluate %s \"%s\": metric result is nil or empty: no data returned from the metric provider", condition, expression)
	}
	return fmt.Errorf("could not evaluate %s \"%s\": %w", condition, expression, err)
}

// evalCondition is Rollouts' EvalCondition: the condition, evaluated
// with the value as `result`, must be a bool. expr's errors lose their
// source excerpt (file.Error's message only), as in Rollouts.
func evalCondition(value any, condition string) (bool, error) {
	env := map[string]any{
		"result":  valueFromPointer(value),
		"asInt":   asInt,
		"asFloat": asFloat,
		"isNaN":   math.IsNaN,
		"isInf":   func(f float64) bool { return math.IsInf(f, 0) },
		"isNil":   func(any) bool { return isNil(value) },
		"default": func(_ any, fallback any) any {
			if isNil(value) {
				return fallback
			}
			return valueFromPointer(value)
		},
	}
	unwrap := func(err error) error {
		if fe, ok := err.(*file.Error); ok {
			return errors.New(fe.Message)
		}
		return err
	}
	program, err := expr.Compile(condition, expr.Env(env))
	if err != nil {
		return false, unwrap(err)
	}
	out, err := expr.Run(program, env)
	if err != nil {
		return false, unwrap(err)
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("expected bool, but got %T", out)
	}
	return b, nil
}

// asInt is Rollouts' asInt: a number truncated, or a string parsed as a
// base-10 integer; anything else fails the evaluation.
func asInt(in any) int64 {
	switch i := in.(type) {
	case float64:
		return int64(i)
	case float32:
		return int64(i)
	case int64:
		return i
	case int32:
		return int64(i)
	case int16:
		return int64(i)
	case int8:
		return int64(i)
	case int:
		return int64(i)
	case uint64:
		return int64(i)
	case uint32:
		return int64(i)
	case uint16:
		return int64(i)
	case uint8:
		return int64(i)
	case uint:
		return int64(i)
	case string:
		v, err := strconv.ParseInt(i, 10, 64)
		if err != nil {
			panic(err) // expr turns a panic into the evaluation's error
		}
		return v
	}
	panic(fmt.Sprintf("asInt() not supported on %v %v", reflect.TypeOf(in), in))
}

// asFloat is Rollouts' asFloat: a number, or a string parsed as a float;
// anything else fails the evaluation.
func asFloat(in any) float64 {
	switch i := in.(type) {
	case float64:
		return i
	case float32:
		return float64(i)
	case int64:
		return float64(i)
	case int32:
		return float64(i)
	case int16:
		return float64(i)
	case int8:
		return float64(i)
	case int:
		return float64(i)
	case uint64:
		return float64(i)
	case uint32:
		return float64(i)
	case uint16:
		return float64(i)
	case uint8:
		return float64(i)
	case uint:
		return float64(i)
	case string:
		v, err := strconv.ParseFloat(i, 64)
		if err != nil {
			panic(err)
		}
		return v
	}
	panic(fmt.Sprintf("asFloat() not supported on %v %v", reflect.TypeOf(in), in))
}

// isNil reports a nil value, or a nil pointer, map, chan or slice (an
// array is never nil).
func isNil(in any) bool {
	if in == nil {
		return true
	}
	switch reflect.TypeOf(in).Kind() {
	case reflect.Ptr, reflect.Map, reflect.Chan, reflect.Slice:
		return reflect.ValueOf(in).IsNil()
	}
	return false
}

// isNilOrEmpty is isNil, or an empty slice or array.
func isNilOrEmpty(in any) bool {
	if isNil(in) {
		return true
	}
	v := reflect.ValueOf(in)
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		return v.Len() == 0
	}
	return false
}

// valueFromPointer is the value a pointer points to (nil for a nil
// pointer, slice, map or chan); any other value as is.
func valueFromPointer(in any) any {
	if isNil(in) {
		return nil
	}
	if reflect.TypeOf(in).Kind() != reflect.Ptr {
		return in
	}
	return reflect.ValueOf(in).Elem().Interface()
}
