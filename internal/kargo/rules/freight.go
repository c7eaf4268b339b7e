package rules

import (
	"crypto/sha1" // nolint:gosec // Kargo's Freight IDs are SHA-1 hex digests.
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation/field"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// GenerateFreightID is Kargo's Freight ID (v1.6.4 internal/api/freight.go
// GenerateFreightID): the SHA-1, in hex, of "<origin>:" followed by the
// Freight's artifacts, each in a canonical form, sorted and joined by "|":
//
//   - a commit: "<normalized repo URL>:<tag>:<id>", or
//     "<normalized repo URL>:<id>" without a tag;
//   - an image: "<repo URL>:<tag>@<digest>";
//   - a chart: "<normalized repo URL>/<name>:<version>".
//
// Two pieces of Freight with the same origin and artifacts have the same ID,
// which the defaulting webhook makes the Freight's name.
func GenerateFreightID(f *kargoapi.Freight) string {
	artifacts := make([]string, 0, len(f.Commits)+len(f.Images)+len(f.Charts))
	for _, commit := range f.Commits {
		if commit.Tag != "" {
			// One commit can carry several tags: each is distinct Freight.
			artifacts = append(artifacts,
				fmt.Sprintf("%s:%s:%s", normalizeGitURL(commit.RepoURL), commit.Tag, commit.ID))
		} else {
			artifacts = append(artifacts,
				fmt.Sprintf("%s:%s", normalizeGitURL(commit.RepoURL), commit.ID))
		}
	}
	for _, image := range f.Images {
		// Both tag and digest: a mutable tag can move to a new digest, and a
		// known digest can be re-tagged.
		artifacts = append(artifacts, fmt.Sprintf("%s:%s@%s", image.RepoURL, image.Tag, image.Digest))
	}
	for _, chart := range f.Charts {
		// path.Join accounts for an empty chart name (OCI repositories).
		artifacts = append(artifacts, fmt.Sprintf("%s:%s",
			path.Join(normalizeChartRepoURL(chart.RepoURL), chart.Name), chart.Version))
	}
	slices.Sort(artifacts)
	return fmt.Sprintf("%x", sha1.Sum([]byte( // nolint:gosec
		fmt.Sprintf("%s:%s", f.Origin.String(), strings.Join(artifacts, "|")),
	)))
}

// normalizeChartRepoURL is Kargo's chart repository URL normalization for
// comparison: trimmed, lowercased, without an oci:// prefix.
func normalizeChartRepoURL(repo string) string {
	return strings.TrimPrefix(strings.ToLower(strings.TrimSpace(repo)), "oci://")
}

var scpSyntaxRegex = regexp.MustCompile(`^((?:[\w-]+@)?[\w-]+(?:\.[\w-]+)*)(?::(.*))?$`)

// normalizeGitURL is Kargo's Git URL normalization for comparison
// (pkg/urls NormalizeGit) of URLs of the forms
//
//   - http[s]://[proxy-user:proxy-pass@]host.xz[:port][/path/to/repo[.git][/]]
//   - ssh://[user@]host.xz[:port][/path/to/repo[.git][/]]
//   - [user@]host.xz[:path/to/repo[.git][/]]
//
// lowercased, without HTTP user info, a trailing slash or ".git"; the SCP
// form becomes ssh://. A URL it cannot normalize is returned as it is.
func normalizeGitURL(repo string) string {
	if hasInternalSpaces(repo) {
		return repo
	}
	orig := repo
	repo = strings.Map(rmSpaceRune, orig)
	if repo == "" {
		return orig
	}
	if strings.HasPrefix(repo, "http://") || strings.HasPrefix(repo, "https://") || strings.HasPrefix(repo, "ssh://") {
		u, err := url.Parse(repo)
		if err != nil || len(u.Query()) > 0 {
			return orig
		}
		if !strings.HasPrefix(repo, "ssh://") {
			u.User = nil
		}
		u.Path = strings.TrimSuffix(u.Path, "/")
		u.Path = strings.TrimSuffix(u.Path, ".git")
		return strings.ToLower(u.String())
	}
	m := scpSyntaxRegex.FindStringSubmatch(repo)
	if len(m) != 2 && len(m) != 3 {
		return orig
	}
	userHost := m[1]
	var p string
	if len(m) == 3 {
		p = m[2]
	}
	pu, err := url.Parse(p)
	if err != nil {
		return orig
	}
	pu.Path = strings.TrimSuffix(pu.Path, "/")
	pu.Path = strings.TrimSuffix(pu.Path, ".git")
	if pu.Path == "" {
		return strings.ToLower("ssh://" + userHost)
	}
	return strings.ToLower(fmt.Sprintf("ssh://%s/%s", userHost, pu.String()))
}

func hasInternalSpaces(repo string) bool {
	trimmed := repo
	if unescaped, err := url.PathUnescape(repo); err == nil {
		trimmed = unescaped
	}
	trimmed = strings.TrimRightFunc(strings.TrimLeftFunc(trimmed, isSpace), isSpace)
	return strings.Map(rmSpaceRune, trimmed) != trimmed
}

func rmSpaceRune(r rune) rune {
	if isSpace(r) {
		return -1
	}
	return r
}

func isSpace(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }

// DefaultFreight is Kargo's Freight defaulting webhook (v1.6.4) on a create
// (create true) or an update of f:
//
//   - on create, metadata.name is (re)set to GenerateFreightID(f), as Kargo
//     does in case a user-made Freight's name is not its ID;
//   - the alias label kargo.akuity.io/alias follows the alias field: set to
//     it when not empty; on an update without an alias, removed; on a create
//     without an alias, the alias is newAlias() (Kargo: an unused random
//     "adjective-animal" name) for both. With newAlias nil a create adopts
//     the label's value as the alias when there is one (as the field's
//     documentation says) and otherwise leaves both empty.
func DefaultFreight(f *kargoapi.Freight, create bool, newAlias func() (string, error)) error {
	if create {
		f.Name = GenerateFreightID(f)
	}
	if f.Labels == nil {
		f.Labels = make(map[string]string, 1)
	}
	switch {
	case f.Alias != "":
		f.Labels[kargoapi.LabelKeyAlias] = f.Alias
	case create && newAlias != nil:
		alias, err := newAlias()
		if err != nil {
			return fmt.Errorf("get available freight alias: %w", err)
		}
		f.Alias = alias
		f.Labels[kargoapi.LabelKeyAlias] = alias
	case create && f.Labels[kargoapi.LabelKeyAlias] != "":
		f.Alias = f.Labels[kargoapi.LabelKeyAlias]
	default:
		delete(f.Labels, kargoapi.LabelKeyAlias)
	}
	if len(f.Labels) == 0 {
		f.Labels = nil
	}
	return nil
}

// ValidateFreight is what the API server and Kargo's Freight validating
// webhook (v1.6.4, on create) reject in f, as field errors:
//
//   - the CRD's schema: origin.kind must be "Warehouse" (the only kind);
//   - origin.name must not be empty (Kargo finds no Warehouse of that name:
//     "warehouse does not exist");
//   - the Freight must have at least one commit, image or chart (Kargo's
//     error, on the empty path).
//
// Checks that need other objects are the caller's: that the alias is not
// another Freight's ("alias already used by another piece of Freight in
// namespace %q"), that the Warehouse exists and subscribes to exactly the
// Freight's artifacts, and that the namespace is a project.
func ValidateFreight(f *kargoapi.Freight) field.ErrorList {
	var errs field.ErrorList
	origin := field.NewPath("origin")
	if f.Origin.Kind != kargoapi.FreightOriginKindWarehouse {
		errs = append(errs, field.NotSupported(origin.Child("kind"), f.Origin.Kind,
			[]string{string(kargoapi.FreightOriginKindWarehouse)}))
	}
	if f.Origin.Name == "" {
		errs = append(errs, field.Required(origin.Child("name"), ""))
	}
	if len(f.Commits) == 0 && len(f.Images) == 0 && len(f.Charts) == 0 {
		errs = append(errs, field.Invalid(field.NewPath(""), f,
			"freight must contain at least one commit, image, or chart"))
	}
	return errs
}

// MsgFreightImmutable rejects an update of a Freight's origin or artifacts.
const MsgFreightImmutable = "Freight is immutable"

// ValidateFreightUpdate is Kargo's Freight webhook rule on update: origin,
// commits, images and charts are immutable. The error is on the first
// field that differs ("Freight is immutable"). Status and metadata may
// change.
func ValidateFreightUpdate(oldFreight, newFreight *kargoapi.Freight) field.ErrorList {
	if p, v, ok := compareFreight(oldFreight, newFreight); !ok {
		return field.ErrorList{field.Invalid(p, v, MsgFreightImmutable)}
	}
	return nil
}

// compareFreight returns the first field path that differs between two
// Freight, its new value, and whether they are equal.
func compareFreight(existing, updated *kargoapi.Freight) (*field.Path, any, bool) {
	if !existing.Origin.Equals(&updated.Origin) {
		return field.NewPath("origin"), updated.Origin, false
	}
	if len(existing.Commits) != len(updated.Commits) {
		return field.NewPath("commits"), updated.Commits, false
	}
	for i, commit := range existing.Commits {
		if !commit.DeepEquals(&updated.Commits[i]) {
			return field.NewPath("commits").Index(i), updated.Commits[i], false
		}
	}
	if len(existing.Images) != len(updated.Images) {
		return field.NewPath("images"), updated.Images, false
	}
	for i, image := range existing.Images {
		if !image.DeepEquals(&updated.Images[i]) {
			return field.NewPath("images").Index(i), updated.Images[i], false
		}
	}
	if len(existing.Charts) != len(updated.Charts) {
		return field.NewPath("charts"), updated.Charts, false
	}
	for i, chart := range existing.Charts {
		if !chart.DeepEquals(&updated.Charts[i]) {
			return field.NewPath("charts").Index(i), updated.Charts[i], false
		}
	}
	return nil, nil, true
}
