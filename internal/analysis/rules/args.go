package rules

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// secretPlaceholder stands for an argument read from a Secret, whose
// value the rules never need (Rollouts' controller validates with the
// same stand-in, getResolvedMetricsWithoutSecrets).
const secretPlaceholder = "temp-for-secret"

// ResolveRunMetrics resolves a run's metrics with its args, as Rollouts'
// analysis controller does before it validates and measures them: a
// Secret's value stands in as a placeholder, every other argument must
// have a value (`argument "x" was not supplied`), and every {{...}} tag
// must name one (`failed to resolve {{x}}`).
func ResolveRunMetrics(metrics []rolloutsapi.Metric, args []rolloutsapi.Argument) ([]rolloutsapi.Metric, error) {
	values := map[string]string{}
	for _, a := range args {
		v := a.Value
		if a.ValueFrom != nil && a.ValueFrom.SecretKeyRef != nil {
			p := secretPlaceholder
			v = &p
		}
		if v == nil {
			return nil, fmt.Errorf("argument %q was not supplied", a.Name)
		}
		values["args."+a.Name] = quoted(*v)
	}
	out := make([]rolloutsapi.Metric, len(metrics))
	for i, m := range metrics {
		r, err := resolveMetric(m, values, true)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// resolveDefaults resolves a template's metric with the args that have a
// value, leaving the other tags as written: they are known only when a
// run of the template starts.
func resolveDefaults(m rolloutsapi.Metric, args []rolloutsapi.Argument) rolloutsapi.Metric {
	values := map[string]string{}
	for _, a := range args {
		if a.Value != nil {
			values["args."+a.Name] = quoted(*a.Value)
		}
	}
	r, err := resolveMetric(m, values, false)
	if err != nil {
		return m
	}
	return r
}

// resolveMetric substitutes values in the metric's JSON (Rollouts'
// ResolveMetricArgs); strict makes an unknown tag an error.
func resolveMetric(m rolloutsapi.Metric, values map[string]string, strict bool) (rolloutsapi.Metric, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return m, fmt.Errorf("encode metric %q: %w", m.Name, err)
	}
	s, err := substitute(string(b), values, strict)
	if err != nil {
		return m, err
	}
	var out rolloutsapi.Metric
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return m, fmt.Errorf("decode metric %q: %w", m.Name, err)
	}
	return out, nil
}

// substitute replaces each {{tag}} (spaces trimmed) with its value, as
// fasttemplate does for Rollouts. Strict, an unknown tag becomes empty and
// the error names the last one; otherwise it is kept as written.
func substitute(s string, values map[string]string, strict bool) (string, error) {
	var b strings.Builder
	var unresolved error
	for {
		start := strings.Index(s, "{{")
		if start < 0 {
			break
		}
		end := strings.Index(s[start+2:], "}}")
		if end < 0 {
			if strict {
				return "", fmt.Errorf("cannot find end tag=%q in the template", "}}")
			}
			break
		}
		tag := s[start+2 : start+2+end]
		b.WriteString(s[:start])
		switch v, ok := values[strings.TrimSpace(tag)]; {
		case ok:
			b.WriteString(v)
		case strict:
			unresolved = fmt.Errorf("failed to resolve {{%s}}", tag)
		default:
			b.WriteString("{{" + tag + "}}")
		}
		s = s[start+2+end+2:]
	}
	b.WriteString(s)
	return b.String(), unresolved
}

// quoted escapes a value for the inside of a JSON string (Rollouts'
// ResolveQuotedArgs: strconv.Quote without the quotes).
func quoted(v string) string {
	q := strconv.Quote(v)
	return q[1 : len(q)-1]
}
