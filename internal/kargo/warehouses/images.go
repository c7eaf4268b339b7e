package warehouses

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/credentials"
)

// discoverImages lists an image repository's tags with
// go-containerregistry (the registry API, no Docker daemon) and selects
// the newest discoveryLimit of them by the subscription's strategy.
// Loopback and *.local registries are spoken to over HTTP, as
// go-containerregistry decides.
// creds (nil for none) are sent as basic authentication, as Kargo sends
// its image credentials.
func discoverImages(ctx context.Context, sub kargoapi.ImageSubscription, creds *credentials.Credentials) (kargoapi.ImageDiscoveryResult, error) {
	res := kargoapi.ImageDiscoveryResult{RepoURL: sub.RepoURL, Platform: sub.Platform}
	repo, err := name.NewRepository(sub.RepoURL)
	if err != nil {
		return res, fmt.Errorf("error parsing image repository URL %q: %w", sub.RepoURL, err)
	}
	opts := []remote.Option{remote.WithContext(ctx)}
	if creds != nil {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: creds.Username, Password: creds.Password}))
	}
	if sub.ImageSelectionStrategy == kargoapi.ImageSelectionStrategyDigest {
		// Digest: the image the tag named (unintuitively) by
		// semverConstraint currently references.
		ref := repo.Tag(sub.SemverConstraint)
		desc, err := remote.Head(ref, opts...)
		if err != nil {
			return res, fmt.Errorf("error getting digest of image %s: %w", ref, err)
		}
		res.References = []kargoapi.DiscoveredImageReference{{Tag: sub.SemverConstraint, Digest: desc.Digest.String()}}
		return res, nil
	}
	tags, err := remote.List(repo, opts...)
	if err != nil {
		return res, fmt.Errorf("error listing tags of image repository %q: %w", sub.RepoURL, err)
	}
	selected, err := selectTags(sub, tags)
	if err != nil {
		return res, err
	}
	for _, tag := range selected {
		desc, err := remote.Head(repo.Tag(tag), opts...)
		if err != nil {
			return res, fmt.Errorf("error getting digest of image %s:%s: %w", sub.RepoURL, tag, err)
		}
		res.References = append(res.References, kargoapi.DiscoveredImageReference{Tag: tag, Digest: desc.Digest.String()})
	}
	return res, nil
}

// selectTags is Kargo's tag selection for SemVer (the default) and
// Lexical: allowTags and ignoreTags filter, then the tags are sorted
// newest first and cut to discoveryLimit. NewestBuild, which needs every
// image's config, is not implemented yet: it is ordered lexically.
func selectTags(sub kargoapi.ImageSubscription, tags []string) ([]string, error) {
	allowed, err := tagFilter(sub.AllowTags, sub.IgnoreTags)
	if err != nil {
		return nil, err
	}
	var out []string
	switch sub.ImageSelectionStrategy {
	case kargoapi.ImageSelectionStrategySemVer, "":
		out, err = semverTags(tags, allowed, sub.SemverConstraint, sub.StrictSemvers)
		if err != nil {
			return nil, err
		}
	default:
		for _, t := range tags {
			if allowed(t) {
				out = append(out, t)
			}
		}
		slices.Sort(out)
		slices.Reverse(out)
	}
	return limit(out, sub.DiscoveryLimit), nil
}

// semverTags are the tags that are semantic versions (all of major.minor.patch
// when strict) meeting the constraint, greatest first.
func semverTags(tags []string, allowed func(string) bool, constraint string, strict bool) ([]string, error) {
	var c *semver.Constraints
	if constraint != "" {
		var err error
		if c, err = semver.NewConstraint(constraint); err != nil {
			return nil, fmt.Errorf("error parsing semver constraint %q: %w", constraint, err)
		}
	}
	type tv struct {
		tag string
		v   *semver.Version
	}
	var vs []tv
	for _, t := range tags {
		if !allowed(t) {
			continue
		}
		v, err := parseSemver(t, strict)
		if err != nil || (c != nil && !c.Check(v)) {
			continue
		}
		vs = append(vs, tv{t, v})
	}
	slices.SortStableFunc(vs, func(a, b tv) int {
		if n := b.v.Compare(a.v); n != 0 {
			return n
		}
		return strings.Compare(b.tag, a.tag)
	})
	out := make([]string, len(vs))
	for i, x := range vs {
		out[i] = x.tag
	}
	return out, nil
}

func parseSemver(s string, strict bool) (*semver.Version, error) {
	if strict {
		return semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
	}
	return semver.NewVersion(s)
}

// tagFilter is allowTags (a regular expression) and ignoreTags (exact
// tags) as one predicate.
func tagFilter(allow string, ignore []string) (func(string) bool, error) {
	var re *regexp.Regexp
	if allow != "" {
		var err error
		if re, err = regexp.Compile(allow); err != nil {
			return nil, fmt.Errorf("error compiling regular expression %q: %w", allow, err)
		}
	}
	return func(t string) bool {
		return (re == nil || re.MatchString(t)) && !slices.Contains(ignore, t)
	}, nil
}

func limit[T any](s []T, n int32) []T {
	if n <= 0 {
		n = 20
	}
	if len(s) > int(n) {
		return s[:n]
	}
	return s
}

// newestImage is the Freight image of a discovery: its newest reference.
func newestImage(r kargoapi.ImageDiscoveryResult) (kargoapi.Image, bool) {
	if len(r.References) == 0 {
		return kargoapi.Image{}, false
	}
	ref := r.References[0]
	return kargoapi.Image{RepoURL: r.RepoURL, Tag: ref.Tag, Digest: ref.Digest}, true
}
