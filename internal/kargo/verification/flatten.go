package verification

import (
	"fmt"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

// flattenTemplates combines several templates' specs into one, as Kargo
// does: metrics, dry-run and measurement-retention entries must be unique
// by name across them; arguments of the same name merge, and two values
// for one are a conflict.
func flattenTemplates(specs []*rolloutsapi.AnalysisTemplateSpec) (rolloutsapi.AnalysisTemplateSpec, error) {
	var out rolloutsapi.AnalysisTemplateSpec
	var err error
	out.Metrics, err = unique(specs, func(s *rolloutsapi.AnalysisTemplateSpec) []rolloutsapi.Metric { return s.Metrics },
		func(m rolloutsapi.Metric) string { return m.Name }, "flatten metrics: duplicate metric name: %q")
	if err != nil {
		return out, err
	}
	out.DryRun, err = unique(specs, func(s *rolloutsapi.AnalysisTemplateSpec) []rolloutsapi.DryRun { return s.DryRun },
		func(d rolloutsapi.DryRun) string { return d.MetricName },
		"flatten dry-run metrics: validate dry-run metrics: duplicate dry-run metric name: %q")
	if err != nil {
		return out, err
	}
	out.MeasurementRetention, err = unique(specs,
		func(s *rolloutsapi.AnalysisTemplateSpec) []rolloutsapi.MeasurementRetention {
			return s.MeasurementRetention
		},
		func(r rolloutsapi.MeasurementRetention) string { return r.MetricName },
		"flatten measurement retention metrics: validate measurement retention metrics: duplicate measurement retention metric name: %q")
	if err != nil {
		return out, err
	}
	for _, s := range specs {
		for _, a := range s.Args {
			if err := mergeArg(&out.Args, a); err != nil {
				return out, fmt.Errorf("flatten arguments: %w", err)
			}
		}
	}
	return out, nil
}

// unique is every spec's items, in order; two of one name are an error
// (dup, formatted with the name).
func unique[T any](specs []*rolloutsapi.AnalysisTemplateSpec, items func(*rolloutsapi.AnalysisTemplateSpec) []T, name func(T) string, dup string) ([]T, error) {
	var out []T
	seen := map[string]bool{}
	for _, s := range specs {
		for _, it := range items(s) {
			if seen[name(it)] {
				return nil, fmt.Errorf(dup, name(it))
			}
			seen[name(it)] = true
			out = append(out, it)
		}
	}
	return out, nil
}

// mergeArg adds a to args, or fills the value of the one of its name.
func mergeArg(args *[]rolloutsapi.Argument, a rolloutsapi.Argument) error {
	for i := range *args {
		e := &(*args)[i]
		if e.Name != a.Name {
			continue
		}
		if e.Value != nil && a.Value != nil && *e.Value != *a.Value {
			return fmt.Errorf("conflicting values for argument %q: %q and %q", e.Name, *e.Value, *a.Value)
		}
		if e.Value == nil && a.Value != nil {
			e.Value = a.Value
		}
		return nil
	}
	*args = append(*args, a)
	return nil
}

// mergeArgs gives the templates' arguments the Stage's values: only
// arguments the templates declare are taken, and every one must end with
// a value or a valueFrom.
func mergeArgs(incoming, template []rolloutsapi.Argument) ([]rolloutsapi.Argument, error) {
	merged := make([]rolloutsapi.Argument, len(template))
	copy(merged, template)
	for _, in := range incoming {
		for i := range merged {
			if merged[i].Name != in.Name {
				continue
			}
			if in.Value != nil {
				merged[i].Value = in.Value
			} else if in.ValueFrom != nil {
				merged[i].ValueFrom = in.ValueFrom
			}
		}
	}
	for _, a := range merged {
		if a.Value == nil && a.ValueFrom == nil {
			return nil, fmt.Errorf("validate merged arguments: unresolved argument %q: neither Value nor ValueFrom is set", a.Name)
		}
	}
	return merged, nil
}
