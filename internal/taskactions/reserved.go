package taskactions

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	v1 "taskactions/api/v1"
)

// reservedDomains own the labels and annotations this server writes
// (flyte.org/run, taskactions.io/terminal-status-recorded, ...). A caller who
// set one could hide a run from the run service or pose as another run's
// action, so none may be set through a run spec.
var reservedDomains = []string{"flyte.org", "taskactions.io"}

// checkRequest refuses what the schema cannot express: reserved label and
// annotation keys, and environment variable names a process cannot have or
// must not be given.
func checkRequest(req EnqueueRequest) error {
	var errs FieldErrors
	if rs := req.RunSpec; rs != nil {
		errs = append(errs, reservedKeys([]string{"runSpec", "labels"}, rs.Labels)...)
		errs = append(errs, reservedKeys([]string{"runSpec", "annotations"}, rs.Annotations)...)
		errs = append(errs, envKeys([]string{"runSpec", "envs"}, rs.Envs)...)
	}
	var tmpl struct {
		Container struct {
			Env map[string]string `json:"env"`
		} `json:"container"`
	}
	if len(req.TaskTemplate) > 0 && json.Unmarshal(req.TaskTemplate, &tmpl) == nil {
		errs = append(errs, envKeys([]string{"action", "task", "taskTemplate", "container", "env"}, tmpl.Container.Env)...)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func reservedKeys(path []string, m map[string]string) FieldErrors {
	var errs FieldErrors
	for _, k := range sortedKeys(m) {
		prefix, _, hasPrefix := strings.Cut(k, "/")
		if !hasPrefix {
			continue
		}
		for _, d := range reservedDomains {
			if prefix == d || strings.HasSuffix(prefix, "."+d) {
				errs = append(errs, FieldError{Path: slices.Concat(path, []string{k}), Detail: "keys under " + d + "/ are the server's own"})
				break
			}
		}
	}
	return errs
}

func envKeys(path []string, m map[string]string) FieldErrors {
	var errs FieldErrors
	for _, k := range sortedKeys(m) {
		if detail := v1.EnvVarProblem(k, m[k]); detail != "" {
			errs = append(errs, FieldError{Path: slices.Concat(path, []string{k}), Detail: detail})
		}
	}
	return errs
}

// sortedKeys makes the errors come out in a stable order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
