package warehouses

import (
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"taskactions/internal/kargo/credentials"
)

// This file is what Kargo v1.6.3's image repository client
// (internal/image/repository_client.go) learns of an image: its build
// date, its platform and its annotations, and how an index (a
// multi-platform image) stands for the image of one platform.

// platformConstraint is a subscription's platform: os/arch[/variant].
type platformConstraint struct {
	os, arch, variant string
}

// parsePlatformConstraint is Kargo's parser: nil for no constraint, and
// an error only when there is no "/" at all.
func parsePlatformConstraint(s string) (*platformConstraint, error) {
	if s == "" {
		return nil, nil
	}
	tokens := strings.SplitN(s, "/", 3)
	if len(tokens) < 2 {
		return nil, fmt.Errorf("error parsing platform constraint %q", s)
	}
	p := &platformConstraint{os: tokens[0], arch: tokens[1]}
	if len(tokens) == 3 {
		p.variant = tokens[2]
	}
	return p, nil
}

func (p *platformConstraint) String() string {
	if p.variant == "" {
		return p.os + "/" + p.arch
	}
	return p.os + "/" + p.arch + "/" + p.variant
}

// matches is an exact match, variant included, as in Kargo: "linux/arm64"
// does not match an image of variant v8.
func (p *platformConstraint) matches(os, arch, variant string) bool {
	return p.os == os && p.arch == arch && p.variant == variant
}

// discoveredImage is what discovery records of one tag.
type discoveredImage struct {
	tag, digest string
	createdAt   *time.Time
	annotations map[string]string
}

// imageFacts is what a digest names, which never changes: for a
// manifest, its build date and platform (from its config); for an
// index, the manifests it lists for a platform. Both keep their own
// annotations. Facts hold no answer for a platform, so one cache entry
// serves every subscription's platform.
type imageFacts struct {
	index             bool
	created           time.Time
	os, arch, variant string
	children          []v1.Descriptor
	annotations       map[string]string
}

// imageClient reads one image repository in one discovery. Its puller
// authenticates once for all of the discovery's requests, where each
// remote.Get on its own would ping the registry and exchange a token.
type imageClient struct {
	repoURL string
	repo    name.Repository
	puller  *remote.Puller
}

// newImageClient accepts a repository URL as Kargo does (a tag in it is
// ignored). creds (nil for none) are sent as basic authentication.
func newImageClient(repoURL string, insecureSkipTLSVerify bool, creds *credentials.Credentials) (*imageClient, error) {
	ref, err := name.ParseReference(repoURL)
	if err != nil {
		return nil, fmt.Errorf("error parsing image repo URL %s: %w", repoURL, err)
	}
	var opts []remote.Option
	if creds != nil {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: creds.Username, Password: creds.Password}))
	}
	transport := remote.DefaultTransport
	if insecureSkipTLSVerify {
		transport = insecureTransport()
	}
	// A registry is not allowed to answer without end: one budget for the
	// whole discovery (a listing, and for NewestBuild a config per tag).
	opts = append(opts, remote.WithTransport(newBoundedTransport(transport, maxImageResponseBytes, errImageResponseTooLarge)))
	puller, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, fmt.Errorf("error creating image puller for repo URL %s: %w", repoURL, err)
	}
	return &imageClient{repoURL: repoURL, repo: ref.Context(), puller: puller}, nil
}

// maxImageResponseBytes bounds what one image discovery reads.
var maxImageResponseBytes int64 = 64 << 20

// errImageResponseTooLarge is the error of reading past
// maxImageResponseBytes.
var errImageResponseTooLarge = errors.New("responses of the image registry are too large")

// insecureTransport is go-containerregistry's transport that does not
// verify the registry's certificate.
func insecureTransport() http.RoundTripper {
	t, ok := remote.DefaultTransport.(*http.Transport)
	if !ok {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	t = t.Clone()
	t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // #nosec G402 -- the subscription asks for it
	return t
}

func (c *imageClient) tags(ctx context.Context) ([]string, error) {
	tags, err := c.puller.List(ctx, c.repo)
	if err != nil {
		return nil, fmt.Errorf("error listing tags for repo URL %s: %w", c.repoURL, err)
	}
	return tags, nil
}

// byTag is the image a tag names now, or nil if it lacks the platform.
func (c *imageClient) byTag(ctx context.Context, tag string, p *platformConstraint) (*discoveredImage, error) {
	img, err := c.get(ctx, c.repo.Tag(tag), fmt.Sprintf("tag %q", tag), p)
	if img != nil {
		img.tag = tag
	}
	return img, err
}

// byDigest is the image a digest names, or nil if it lacks the platform.
func (c *imageClient) byDigest(ctx context.Context, digest string, p *platformConstraint) (*discoveredImage, error) {
	return c.get(ctx, c.repo.Digest(digest), "digest "+digest, p)
}

// get learns the facts of ref (from the cache if its digest has been
// seen) and applies the platform to them.
func (c *imageClient) get(ctx context.Context, ref name.Reference, what string, p *platformConstraint) (*discoveredImage, error) {
	digest, f := c.cached(ctx, ref)
	if f == nil {
		if digest != "" {
			// Read what HEAD named, not the tag again: it may have moved.
			ref = c.repo.Digest(digest)
		}
		desc, err := c.puller.Get(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("error getting image descriptor for %s from repo URL %s: %w", what, c.repoURL, err)
		}
		digest = desc.Digest.String()
		if f, err = c.learn(desc); err != nil {
			return nil, fmt.Errorf("error getting image from descriptor for %s from repo URL %s: %w", what, c.repoURL, err)
		}
	}
	img, err := c.resolve(ctx, digest, f, p)
	if err != nil {
		return nil, fmt.Errorf("error getting image from descriptor for %s from repo URL %s: %w", what, c.repoURL, err)
	}
	return img, nil
}

// cached is ref's digest and facts if known. A tag costs a HEAD, which
// registries do not count as a pull; a failed HEAD is not an error here:
// the GET that follows says why, as go-containerregistry advises.
func (c *imageClient) cached(ctx context.Context, ref name.Reference) (string, *imageFacts) {
	digest := ""
	if d, ok := ref.(name.Digest); ok {
		digest = d.DigestStr()
	} else if desc, err := c.puller.Head(ctx, ref); err == nil {
		digest = desc.Digest.String()
	}
	if digest == "" {
		return "", nil
	}
	return digest, imageFactsCache.get(c.key(digest))
}

// key is per repository: a digest is the same content anywhere, but a
// repository's facts are then only read by who could read its tags.
func (c *imageClient) key(digest string) string {
	return c.repo.Name() + "@" + digest
}

// learn reads the facts of a manifest or index (for a manifest, its
// config too) and caches them.
func (c *imageClient) learn(desc *remote.Descriptor) (*imageFacts, error) {
	var f *imageFacts
	var err error
	switch desc.MediaType {
	case types.OCIImageIndex, types.DockerManifestList:
		f, err = indexFacts(desc)
	case types.OCIManifestSchema1, types.DockerManifestSchema2:
		f, err = manifestFacts(desc)
	default:
		err = fmt.Errorf("unknown artifact type: %s", desc.MediaType)
	}
	if err != nil {
		return nil, err
	}
	imageFactsCache.put(c.key(desc.Digest.String()), f)
	return f, nil
}

func indexFacts(desc *remote.Descriptor) (*imageFacts, error) {
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("error getting image index from descriptor with digest %s: %w", desc.Digest, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("error getting index manifest from index with digest %s: %w", desc.Digest, err)
	}
	f := &imageFacts{index: true, annotations: m.Annotations}
	for _, ref := range m.Manifests {
		// What has no platform is no image (an attestation, a signature).
		if ref.Platform == nil || unknownPlatform(ref.Platform.OS) || unknownPlatform(ref.Platform.Architecture) {
			continue
		}
		f.children = append(f.children, v1.Descriptor{Digest: ref.Digest, Platform: ref.Platform})
	}
	return f, nil
}

func unknownPlatform(s string) bool { return s == "" || s == "unknown" }

func manifestFacts(desc *remote.Descriptor) (*imageFacts, error) {
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("error getting image from descriptor with digest %s: %w", desc.Digest, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("error getting image config for image with digest %s: %w", desc.Digest, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("error getting manifest for image with digest %s: %w", desc.Digest, err)
	}
	return &imageFacts{created: cfg.Created.Time, os: cfg.OS, arch: cfg.Architecture, variant: cfg.Variant,
		annotations: m.Annotations}, nil
}

// resolve is Kargo's image of a digest: a manifest is itself if of the
// platform; an index is dated by its platform's manifest, or without a
// platform by its newest manifest. An index keeps its own digest and
// annotations (Kargo records the index, not the platform's manifest).
func (c *imageClient) resolve(ctx context.Context, digest string, f *imageFacts, p *platformConstraint) (*discoveredImage, error) {
	if !f.index {
		if p != nil && !p.matches(f.os, f.arch, f.variant) {
			return nil, nil
		}
		return newDiscoveredImage(digest, f.created, f.annotations), nil
	}
	if len(f.children) == 0 {
		return nil, errors.New("empty V2 manifest list or OCI index is not supported")
	}
	if p != nil {
		return c.resolveForPlatform(ctx, digest, f, p)
	}
	var newest time.Time
	for i, ref := range f.children {
		img, err := c.byDigest(ctx, ref.Digest.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("error getting image with digest %s: %w", ref.Digest, err)
		}
		if i == 0 || img.createdAt.After(newest) {
			newest = *img.createdAt
		}
	}
	return newDiscoveredImage(digest, newest, f.annotations), nil
}

func (c *imageClient) resolveForPlatform(ctx context.Context, digest string, f *imageFacts, p *platformConstraint) (*discoveredImage, error) {
	var matched []v1.Descriptor
	for _, ref := range f.children {
		if p.matches(ref.Platform.OS, ref.Platform.Architecture, ref.Platform.Variant) {
			matched = append(matched, ref)
		}
	}
	switch len(matched) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("expected only one reference to match platform %q, but found %d", p, len(matched))
	}
	child := matched[0].Digest.String()
	img, err := c.byDigest(ctx, child, p)
	if err != nil {
		return nil, fmt.Errorf("error getting image with digest %s: %w", child, err)
	}
	if img == nil {
		return nil, fmt.Errorf("expected manifest for digest %s to match platform %q, but it did not", child, p)
	}
	return newDiscoveredImage(digest, *img.createdAt, f.annotations), nil
}

// newDiscoveredImage copies the annotations: the cache keeps its own.
func newDiscoveredImage(digest string, created time.Time, annotations map[string]string) *discoveredImage {
	return &discoveredImage{digest: digest, createdAt: &created, annotations: maps.Clone(annotations)}
}

// imageFactsCacheSize bounds the cache to a few megabytes (an entry is a
// date, a platform, a few descriptors and annotations). It is large for
// a reason: NewestBuild reads every matching tag on every poll, and a
// cache smaller than a repository's tags would be flushed by each poll
// (least recently used, read in the same order).
const imageFactsCacheSize = 8192

// imageFactsCache outlives a poll: a digest's facts never change, so a
// repository's configs are downloaded once, not on every poll.
var imageFactsCache = newFactsCache(imageFactsCacheSize)

// factsCache is a least-recently-used cache of at most max entries.
type factsCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *factsEntry, most recently used first
	items map[string]*list.Element
}

type factsEntry struct {
	key   string
	facts *imageFacts
}

func newFactsCache(max int) *factsCache {
	return &factsCache{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (c *factsCache) get(key string) *imageFacts {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*factsEntry).facts
}

func (c *factsCache) put(key string, f *imageFacts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		e.Value.(*factsEntry).facts = f
		c.order.MoveToFront(e)
		return
	}
	c.items[key] = c.order.PushFront(&factsEntry{key: key, facts: f})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*factsEntry).key)
	}
}
