package rules

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// DefaultWarehouse is Kargo v1.6.3's Warehouse defaulting webhook: the
// kargo.akuity.io/shard label follows spec.shard. It reports whether it
// changed the labels.
func DefaultWarehouse(w *kargoapi.Warehouse) bool {
	s := kargoapi.Stage{ObjectMeta: w.ObjectMeta}
	s.Spec.Shard = w.Spec.Shard
	if !DefaultStage(&s) { // the same rule as the Stage's
		return false
	}
	w.Labels = s.Labels
	return true
}

// ValidateWarehouse is Kargo v1.6.3's Warehouse validating webhook
// (validateSpec; the project check is the caller's): each subscription is
// exactly one of git, image or chart, semver constraints parse, an image
// platform is os/arch[/variant], a chart's name is given for an HTTP
// repository and not for an OCI one, and no repository is subscribed to
// twice. The CRD's schema rules are the API server's.
func ValidateWarehouse(w *kargoapi.Warehouse) field.ErrorList {
	f := field.NewPath("spec", "subscriptions")
	var errs field.ErrorList
	seen := uniqueSubs{}
	for i, sub := range w.Spec.Subscriptions {
		errs = append(errs, validateSub(f.Index(i), sub, seen)...)
	}
	return errs
}

func validateSub(f *field.Path, sub kargoapi.RepoSubscription, seen uniqueSubs) field.ErrorList {
	var errs field.ErrorList
	var kinds int
	if g := sub.Git; g != nil {
		kinds++
		errs = appendNonNil(errs, validateSemverConstraint(f.Child("git", "semverConstraint"), g.SemverConstraint))
		errs = appendNonNil(errs, seen.add(f.Child("git"), "git", normalizeGitURL(g.RepoURL), g.RepoURL,
			"subscription for Git repository already exists at %q"))
	}
	if im := sub.Image; im != nil {
		kinds++
		errs = appendNonNil(errs, validateSemverConstraint(f.Child("image", "semverConstraint"), im.SemverConstraint))
		if im.Platform != "" && !ValidPlatform(im.Platform) {
			errs = append(errs, field.Invalid(f.Child("image", "platform"), im.Platform, ""))
		}
		errs = appendNonNil(errs, seen.add(f.Child("image"), "image", normalizeChartRepoURL(im.RepoURL), im.RepoURL,
			"subscription for image repository already exists at %q"))
	}
	if c := sub.Chart; c != nil {
		kinds++
		errs = append(errs, validateChartSub(f.Child("chart"), *c, seen)...)
	}
	if kinds != 1 {
		errs = append(errs, field.Invalid(f, sub, fmt.Sprintf(
			"exactly one of %s.git, %s.image, or %s.chart must be non-empty", f, f, f)))
	}
	return errs
}

func validateChartSub(f *field.Path, sub kargoapi.ChartSubscription, seen uniqueSubs) field.ErrorList {
	errs := appendNonNil(nil, validateSemverConstraint(f.Child("semverConstraint"), sub.SemverConstraint))
	if strings.HasPrefix(sub.RepoURL, "oci://") && sub.Name != "" {
		errs = append(errs, field.Invalid(f.Child("name"), sub.Name, "must be empty if repoURL starts with oci://"))
	}
	isHTTP := strings.HasPrefix(sub.RepoURL, "http://") || strings.HasPrefix(sub.RepoURL, "https://")
	if isHTTP && sub.Name == "" {
		errs = append(errs, field.Invalid(f.Child("name"), sub.Name,
			"must be non-empty if repoURL starts with http:// or https://"))
	}
	id, msg := normalizeChartRepoURL(sub.RepoURL), "subscription for chart already exists at %q"
	if isHTTP {
		id += ":" + sub.Name
		msg = fmt.Sprintf("subscription for chart %q already exists at %%q", sub.Name)
	}
	return appendNonNil(errs, seen.add(f, "chart", id, sub.RepoURL, msg))
}

// ValidPlatform reports whether p is an image platform constraint as
// Kargo parses one: os/arch or os/arch/variant.
func ValidPlatform(p string) bool {
	return len(strings.SplitN(p, "/", 3)) >= 2
}

func validateSemverConstraint(f *field.Path, c string) *field.Error {
	if c == "" {
		return nil
	}
	if _, err := semver.NewConstraint(c); err != nil {
		return field.Invalid(f, c, "")
	}
	return nil
}

// uniqueSubs is the subscriptions seen so far, by kind and normalized
// repository, with where each was.
type uniqueSubs map[[2]string]*field.Path

// add records a subscription at f; one seen before is Kargo's error on f,
// with msgFmt given the earlier path.
func (s uniqueSubs) add(f *field.Path, kind, id, repoURL, msgFmt string) *field.Error {
	k := [2]string{kind, id}
	if prev, ok := s[k]; ok {
		return field.Invalid(f, repoURL, fmt.Sprintf(msgFmt, prev))
	}
	s[k] = f
	return nil
}

func appendNonNil(errs field.ErrorList, err *field.Error) field.ErrorList {
	if err != nil {
		return append(errs, err)
	}
	return errs
}
