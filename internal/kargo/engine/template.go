package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
)

// The delimiters of an expression inside a template string.
const (
	exprStart = "${{"
	exprEnd   = "}}"
)

// EvaluateTemplate evaluates a template string the way Kargo's
// internal/expressions.EvaluateTemplate does:
//
//   - A string with no "${{" is returned unchanged (so "42" stays the string
//     "42").
//   - Otherwise every "${{ expr }}" is evaluated with expr-lang against env
//     and the results are written into the text in place: a string result as
//     is, any other result as its JSON encoding.
//   - The whole rendered text is then read back as a typed value, as YAML
//     would read it: text wrapped in double quotes is returned as the string
//     inside them (this is what quote() is for); else a number is returned as
//     float64, a bool as bool, any other JSON (object, array, null) as its
//     decoded value; else the text is returned as a string.
//
// So a value that is exactly one expression yields the expression's typed
// value (JSON-normalised: numbers are float64, maps map[string]any) and text
// around expressions yields a string, except where the rendered text happens
// to read as a number/bool/JSON (Kargo's documented behaviour: "1${{ 2 }}" is
// the number 12, and a single expression whose value is the string "1.0" is
// the number 1; write ${{ quote(x) }} to force a string).
//
// Two deliberate departures from Kargo, both fixing inputs Kargo mangles:
// numbers are tried before bools (Kargo's strconv.ParseBool turns "1" and "0"
// into true and false), and "NaN"/"Inf" are not read as numbers (Kargo would
// fail later when encoding the config as JSON).
//
// The function quote(x) is always available: it makes x's text (a string as
// is, anything else as JSON) come out as a string. opts add further expr
// options (functions); the promotion engine adds success(), failure(),
// always() and status().
//
// An error names the failing expression and the reason.
func EvaluateTemplate(s string, env map[string]any, opts ...expr.Option) (any, error) {
	if !strings.Contains(s, exprStart) {
		return s, nil
	}
	opts = append(slices.Clip(opts), quoteFunction())

	var out strings.Builder
	rest := s
	for {
		i := strings.Index(rest, exprStart)
		if i < 0 {
			out.WriteString(rest)
			break
		}
		out.WriteString(rest[:i])
		rest = rest[i+len(exprStart):]
		j := strings.Index(rest, exprEnd)
		if j < 0 {
			return nil, fmt.Errorf("error parsing template %q: %q has no closing %q", s, exprStart, exprEnd)
		}
		code := rest[:j]
		rest = rest[j+len(exprEnd):]

		v, err := runExpression(code, env, opts)
		if err != nil {
			return nil, err
		}
		if str, ok := v.(string); ok {
			out.WriteString(str)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("error evaluating expression %q: cannot encode its result as JSON: %w",
				strings.TrimSpace(code), err)
		}
		out.Write(b)
	}
	return readBack(out.String()), nil
}

// runExpression compiles and runs one expression (the text between the
// delimiters).
func runExpression(code string, env map[string]any, opts []expr.Option) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("error evaluating expression %q: panic: %v", strings.TrimSpace(code), r)
		}
	}()
	program, err := expr.Compile(code, opts...)
	if err != nil {
		return nil, fmt.Errorf("error evaluating expression %q: %w", strings.TrimSpace(code), err)
	}
	v, err = expr.Run(program, env)
	if err != nil {
		return nil, fmt.Errorf("error evaluating expression %q: %w", strings.TrimSpace(code), err)
	}
	return v, nil
}

// readBack reads rendered template text back as a typed value (see
// EvaluateTemplate).
func readBack(result string) any {
	// A trailing newline (YAML's "|" block) is ignored while typing the
	// value and kept on a string result.
	var newline string
	if strings.HasSuffix(result, "\n") {
		result = strings.TrimSuffix(result, "\n")
		newline = "\n"
	}
	if len(result) > 1 && strings.HasPrefix(result, `"`) && strings.HasSuffix(result, `"`) {
		return result[1:len(result)-1] + newline
	}
	if f, err := strconv.ParseFloat(result, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f
	}
	if b, err := strconv.ParseBool(result); err == nil {
		return b
	}
	var v any
	if err := json.Unmarshal([]byte(result), &v); err == nil {
		return v
	}
	return result + newline
}

// quoteFunction is Kargo's quote(): its result is wrapped in double quotes,
// which readBack strips, so the value stays a string.
func quoteFunction() expr.Option {
	return expr.Function(
		"quote",
		func(a ...any) (any, error) {
			if s, ok := a[0].(string); ok {
				return `"` + s + `"`, nil
			}
			b, err := json.Marshal(a[0])
			if err != nil {
				return nil, fmt.Errorf("error applying quote() function: %w", err)
			}
			return `"` + string(b) + `"`, nil
		},
		new(func(any) string),
	)
}

// EvaluateConfig evaluates a step's config: JSON whose string values (at any
// depth, in objects and arrays; never keys) may contain ${{ }} expressions,
// each string evaluated with EvaluateTemplate against env. The config must be
// a JSON object (or empty/null, which yields a nil map). Numbers come back as
// float64. "quote" may not be a key of env (it is the quote() function). An
// error names the field, the expression and the reason.
func EvaluateConfig(raw []byte, env map[string]any, opts ...expr.Option) (map[string]any, error) {
	if _, ok := env["quote"]; ok {
		return nil, fmt.Errorf(`"quote" is a forbidden key in the environment map; it is reserved for internal use`)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("config is not a valid JSON object; are all expressions enclosed in quotes? %w", err)
	}
	if err := evaluateIn(cfg, "", env, opts); err != nil {
		return nil, err
	}
	return cfg, nil
}

// evaluateIn evaluates, in place, every string inside a decoded JSON object
// or array. Keys are visited in sorted order so the first error reported is
// always the same one.
func evaluateIn(collection any, path string, env map[string]any, opts []expr.Option) error {
	eval := func(v any, at string, set func(any)) error {
		switch v := v.(type) {
		case map[string]any, []any:
			return evaluateIn(v, at, env, opts)
		case string:
			res, err := EvaluateTemplate(v, env, opts...)
			if err != nil {
				return fmt.Errorf("config field %s: %w", at, err)
			}
			set(res)
		}
		return nil
	}
	switch col := collection.(type) {
	case map[string]any:
		keys := make([]string, 0, len(col))
		for k := range col {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			at := k
			if path != "" {
				at = path + "." + k
			}
			if err := eval(col[k], at, func(v any) { col[k] = v }); err != nil {
				return err
			}
		}
	case []any:
		for i := range col {
			at := fmt.Sprintf("%s[%d]", path, i)
			if err := eval(col[i], at, func(v any) { col[i] = v }); err != nil {
				return err
			}
		}
	}
	return nil
}
