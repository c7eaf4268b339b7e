package rules

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// ValidateProjectConfig is Kargo v1.6.3's ProjectConfig validating webhook
// (internal/webhook/kubernetes/projectconfig; the project check is the
// caller's): on create the name must be the project's; on create and
// update a promotion policy's Stage name may be a "glob:", "regex:" or
// "regexp:" pattern that parses, and no exact Stage name has two policies;
// webhook receivers have unique names and one kind each. The CRD's schema
// rules (a policy has exactly one of stage and stageSelector) are the API
// server's.
func ValidateProjectConfig(cfg *kargoapi.ProjectConfig, create bool) field.ErrorList {
	var errs field.ErrorList
	if create && cfg.Name != cfg.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cfg.Name,
			fmt.Sprintf("name %q must match project name %q", cfg.Name, cfg.Namespace)))
	}
	spec := field.NewPath("spec")
	errs = append(errs, validatePromotionPolicies(spec.Child("promotionPolicies"), cfg.Spec.PromotionPolicies)...)
	return append(errs, validateWebhookReceivers(spec.Child("webhookReceivers"), cfg.Spec.WebhookReceivers)...)
}

// validatePromotionPolicies: patterns parse, and an exact Stage name is
// not given twice (each repeat is an error naming the first).
func validatePromotionPolicies(f *field.Path, policies []kargoapi.PromotionPolicy) field.ErrorList {
	var errs field.ErrorList
	first := map[string]int{} // exact Stage name -> index of its first policy
	for i, p := range policies {
		stage := policyStageName(p)
		if stage == "" {
			continue
		}
		if id, _, isPattern := strings.Cut(stage, ":"); isPattern {
			// Only stageSelector.name may hold a pattern: the deprecated
			// stage field has the schema's name pattern.
			at := f.Index(i).Child("stageSelector", "name")
			if m, err := parseNamePattern(stage); err != nil {
				errs = append(errs, field.Invalid(at, stage, err.Error()))
			} else if m.exact {
				errs = append(errs, field.Invalid(at, stage,
					fmt.Sprintf(`invalid pattern identifier %q: must be "regex", "regexp" or "glob"`, id)))
			}
			continue
		}
		if j, seen := first[stage]; seen {
			errs = append(errs, field.Invalid(f.Index(i), stage, fmt.Sprintf("stage name already defined at %s", f.Index(j))))
			continue
		}
		first[stage] = i
	}
	return errs
}

// policyStageName is the Stage name a policy names: its selector's, else
// the deprecated stage field's.
func policyStageName(p kargoapi.PromotionPolicy) string {
	if p.StageSelector != nil {
		return p.StageSelector.Name
	}
	return p.Stage // nolint:staticcheck // Kargo's backward compatibility
}

// validateWebhookReceivers is Kargo's ValidateWebhookReceivers
// (internal/webhook/kubernetes/external): unique names, then one kind per
// receiver.
func validateWebhookReceivers(f *field.Path, receivers []kargoapi.WebhookReceiverConfig) field.ErrorList {
	var errs field.ErrorList
	first := map[string]int{}
	for i, r := range receivers {
		if j, seen := first[r.Name]; seen {
			errs = append(errs, field.Invalid(f.Index(i).Child("name"), r.Name,
				fmt.Sprintf("webhook receiver name already defined at %s", f.Index(j))))
			continue
		}
		first[r.Name] = i
	}
	for i, r := range receivers {
		if kinds := receiverKinds(r); len(kinds) > 1 {
			errs = append(errs, field.Forbidden(f.Index(i), fmt.Sprintf(
				"cannot define a receiver that is of more than one type, found %d: %s", len(kinds), kinds)))
		}
	}
	return errs
}

func receiverKinds(r kargoapi.WebhookReceiverConfig) []string {
	var kinds []string
	for _, k := range []struct {
		name string
		set  bool
	}{
		{"Bitbucket", r.Bitbucket != nil}, {"DockerHub", r.DockerHub != nil}, {"GitHub", r.GitHub != nil},
		{"GitLab", r.GitLab != nil}, {"Quay", r.Quay != nil},
	} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	return kinds
}

// namePattern is Kargo's name pattern (internal/pattern ParseNamePattern):
// "glob:" and a doublestar glob, "regex:" or "regexp:" and a regular
// expression (unanchored, as Go's MatchString has it), or else the exact
// name.
type namePattern struct {
	match func(string) bool
	exact bool
}

func parseNamePattern(p string) (namePattern, error) {
	if glob, ok := strings.CutPrefix(p, "glob:"); ok {
		if !doublestar.ValidatePattern(glob) {
			return namePattern{}, doublestar.ErrBadPattern
		}
		return namePattern{match: func(s string) bool { return doublestar.MatchUnvalidated(glob, s) }}, nil
	}
	for _, prefix := range []string{"regex:", "regexp:"} {
		if expr, ok := strings.CutPrefix(p, prefix); ok {
			re, err := regexp.Compile(expr)
			if err != nil {
				return namePattern{}, err
			}
			return namePattern{match: re.MatchString}, nil
		}
	}
	return namePattern{match: func(s string) bool { return s == p }, exact: true}, nil
}
