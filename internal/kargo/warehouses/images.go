package warehouses

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/credentials"
)

// discoverImages discovers the newest discoveryLimit images of a
// subscription as Kargo v1.6.3 does (internal/image), with
// go-containerregistry (the registry API, no Docker daemon). Loopback and
// *.local registries are spoken to over HTTP, as go-containerregistry
// decides. creds (nil for none) are sent as basic authentication, as
// Kargo sends its image credentials. Errors are Kargo's, wrapped as its
// Warehouse reconciler wraps them.
func discoverImages(ctx context.Context, sub kargoapi.ImageSubscription, creds *credentials.Credentials) (kargoapi.ImageDiscoveryResult, error) {
	res := kargoapi.ImageDiscoveryResult{RepoURL: sub.RepoURL, Platform: sub.Platform}
	images, err := discoverImageRefs(ctx, sub, creds)
	if err != nil {
		return res, authHint(fmt.Errorf("error discovering latest images %q: %w", sub.RepoURL, err), creds)
	}
	for _, img := range images {
		ref := kargoapi.DiscoveredImageReference{Tag: img.tag, Digest: img.digest, Annotations: img.annotations}
		if img.createdAt != nil {
			ref.CreatedAt = &metav1.Time{Time: *img.createdAt}
		}
		res.References = append(res.References, ref)
	}
	return res, nil
}

// authHint says which credentials a registry refused: its 401 reads the
// same with wrong credentials as with none, and the fix differs.
func authHint(err error, creds *credentials.Credentials) error {
	var te *transport.Error
	if !errors.As(err, &te) || (te.StatusCode != http.StatusUnauthorized && te.StatusCode != http.StatusForbidden) {
		return err
	}
	if creds == nil {
		return fmt.Errorf("%w (no image credentials are stored for this repository)", err)
	}
	return fmt.Errorf("%w (the registry refused the image credentials stored for this repository)", err)
}

func discoverImageRefs(ctx context.Context, sub kargoapi.ImageSubscription, creds *credentials.Credentials) ([]discoveredImage, error) {
	s, err := newImageSelector(sub, creds)
	if err != nil {
		return nil, fmt.Errorf("error creating image selector for image %q: %w", sub.RepoURL, err)
	}
	images, err := s.selectImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("error discovering newest applicable images %q: %w", sub.RepoURL, err)
	}
	return images, nil
}

// imageSelector is a subscription made ready: a subscription in error
// fails before the registry is asked anything, checked in Kargo's order.
type imageSelector struct {
	sub      kargoapi.ImageSubscription
	allowed  func(string) bool
	platform *platformConstraint
	client   *imageClient
}

func newImageSelector(sub kargoapi.ImageSubscription, creds *credentials.Credentials) (*imageSelector, error) {
	allowed, err := tagFilter(sub.AllowTags, sub.IgnoreTags)
	if err != nil {
		return nil, err
	}
	platform, err := parsePlatformConstraint(sub.Platform)
	if err != nil {
		return nil, fmt.Errorf("error parsing platform constraint %q: %w", sub.Platform, err)
	}
	client, err := newImageClient(sub.RepoURL, sub.InsecureSkipTLSVerify, creds)
	if err != nil {
		return nil, fmt.Errorf("error creating repository client for image %q: %w", sub.RepoURL, err)
	}
	switch sub.ImageSelectionStrategy {
	case kargoapi.ImageSelectionStrategyDigest:
		if sub.SemverConstraint == "" {
			return nil, errors.New("digest selection strategy requires a constraint")
		}
	case kargoapi.ImageSelectionStrategyLexical, kargoapi.ImageSelectionStrategyNewestBuild:
	case kargoapi.ImageSelectionStrategySemVer, "":
		if _, err := semverConstraint(sub.SemverConstraint); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("invalid image selection strategy %q", sub.ImageSelectionStrategy)
	}
	return &imageSelector{sub: sub, allowed: allowed, platform: platform, client: client}, nil
}

func (s *imageSelector) selectImages(ctx context.Context) ([]discoveredImage, error) {
	switch s.sub.ImageSelectionStrategy {
	case kargoapi.ImageSelectionStrategyDigest:
		return s.selectByDigest(ctx)
	case kargoapi.ImageSelectionStrategyNewestBuild:
		return s.selectNewestBuild(ctx)
	}
	tags, err := s.client.tags(ctx)
	if err != nil {
		return nil, fmt.Errorf("error listing tags: %w", err)
	}
	ordered, err := orderTags(s.sub, tags, s.allowed)
	if err != nil {
		return nil, err
	}
	return s.firstOfPlatform(ctx, ordered)
}

// firstOfPlatform is SemVer's and Lexical's: the images of the tags in
// order, skipping those without the platform, until discoveryLimit.
// Only as many tags are read as it takes.
func (s *imageSelector) firstOfPlatform(ctx context.Context, tags []string) ([]discoveredImage, error) {
	n := discoveryLimit(s.sub.DiscoveryLimit)
	var out []discoveredImage
	for _, tag := range tags {
		if len(out) >= n {
			break
		}
		img, err := s.client.byTag(ctx, tag, s.platform)
		if err != nil {
			return nil, fmt.Errorf("error retrieving image with tag %q: %w", tag, err)
		}
		if img != nil {
			out = append(out, *img)
		}
	}
	return out, nil
}

// selectByDigest is Digest: the image the tag named (unintuitively) by
// semverConstraint references now. A tag that does not exist, or whose
// image lacks the platform, is no image, not an error, as in Kargo.
func (s *imageSelector) selectByDigest(ctx context.Context) ([]discoveredImage, error) {
	tag := s.sub.SemverConstraint
	img, err := s.client.byTag(ctx, tag, s.platform)
	if err != nil {
		if te := (*transport.Error)(nil); errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
			return nil, nil
		}
		return nil, fmt.Errorf("error retrieving image with tag %q: %w", tag, err)
	}
	if img == nil {
		return nil, nil
	}
	return []discoveredImage{*img}, nil
}

// newestBuildConcurrency bounds the images a NewestBuild discovery reads
// at once: it reads one per matching tag, and a registry that throttles
// would otherwise see a burst of them (Kargo allows 1000, rate-limited
// per registry).
const newestBuildConcurrency = 4

// selectNewestBuild is NewestBuild: the images of every tag allowTags and
// ignoreTags let through, newest build first (ties: the greater tag).
// The order is by each image's date without a platform (an index: its
// newest manifest); with a platform, images without it are skipped, and
// an index is dated by its platform's manifest, as in Kargo.
func (s *imageSelector) selectNewestBuild(ctx context.Context) ([]discoveredImage, error) {
	tags, err := s.client.tags(ctx)
	if err != nil {
		return nil, fmt.Errorf("error listing tags: %w", err)
	}
	images, err := s.imagesOfTags(ctx, filterTags(tags, s.allowed))
	if err != nil {
		return nil, fmt.Errorf("error retrieving images for all matched tags: %w", err)
	}
	slices.SortFunc(images, func(a, b discoveredImage) int {
		if n := b.createdAt.Compare(*a.createdAt); n != 0 {
			return n
		}
		return strings.Compare(b.tag, a.tag)
	})
	if s.platform == nil {
		return limit(images, s.sub.DiscoveryLimit), nil
	}
	n := discoveryLimit(s.sub.DiscoveryLimit)
	var out []discoveredImage
	for _, img := range images {
		if len(out) >= n {
			break
		}
		// The cache holds this digest's facts since imagesOfTags.
		p, err := s.client.byDigest(ctx, img.digest, s.platform)
		if err != nil {
			return nil, fmt.Errorf("error retrieving image with digest %q: %w", img.digest, err)
		}
		if p != nil {
			p.tag = img.tag
			out = append(out, *p)
		}
	}
	return out, nil
}

// imagesOfTags reads the tags' images, newestBuildConcurrency at a time;
// the first error stops the others.
func (s *imageSelector) imagesOfTags(ctx context.Context, tags []string) ([]discoveredImage, error) {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(newestBuildConcurrency)
	images := make([]*discoveredImage, len(tags))
	for i, tag := range tags {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			img, err := s.client.byTag(ctx, tag, nil)
			images[i] = img
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make([]discoveredImage, 0, len(images))
	for _, img := range images {
		if img != nil {
			out = append(out, *img)
		}
	}
	return out, nil
}

// orderTags is Kargo's tag order for SemVer (the default) and Lexical:
// allowTags and ignoreTags filter, then the tags are sorted newest first.
// The discovery limit applies after, to the images of the platform.
func orderTags(sub kargoapi.ImageSubscription, tags []string, allowed func(string) bool) ([]string, error) {
	if sub.ImageSelectionStrategy == kargoapi.ImageSelectionStrategyLexical {
		out := filterTags(tags, allowed)
		slices.Sort(out)
		slices.Reverse(out)
		return out, nil
	}
	return bySemver(filterTags(tags, allowed), func(t string) string { return t }, sub.SemverConstraint, sub.StrictSemvers)
}

func filterTags(tags []string, allowed func(string) bool) []string {
	var out []string
	for _, t := range tags {
		if allowed(t) {
			out = append(out, t)
		}
	}
	return out
}

func semverConstraint(constraint string) (*semver.Constraints, error) {
	if constraint == "" {
		return nil, nil
	}
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return nil, fmt.Errorf("error parsing semver constraint %q: %w", constraint, err)
	}
	return c, nil
}

// bySemver keeps the items whose tag is a semantic version (all of
// major.minor.patch when strict) meeting the constraint, greatest first;
// equal versions ("1.0", "1.0.0") are ordered by their tag's text, so the
// order is always the same. Image tags and Git tags both go through it.
func bySemver[T any](items []T, tagOf func(T) string, constraint string, strict bool) ([]T, error) {
	c, err := semverConstraint(constraint)
	if err != nil {
		return nil, err
	}
	type tv struct {
		item T
		tag  string
		v    *semver.Version
	}
	var vs []tv
	for _, it := range items {
		t := tagOf(it)
		v, err := parseSemver(t, strict)
		if err != nil || (c != nil && !c.Check(v)) {
			continue
		}
		vs = append(vs, tv{it, t, v})
	}
	slices.SortStableFunc(vs, func(a, b tv) int {
		if n := b.v.Compare(a.v); n != 0 {
			return n
		}
		return strings.Compare(b.tag, a.tag)
	})
	out := make([]T, len(vs))
	for i, x := range vs {
		out[i] = x.item
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

// limit cuts s to a subscription's discoveryLimit (in git.go: the
// CRD's default, 20, when unset; Kargo's 0, no limit, cannot be set
// through the CRD).
func limit[T any](s []T, n int32) []T {
	if m := discoveryLimit(n); len(s) > m {
		return s[:m]
	}
	return s
}
