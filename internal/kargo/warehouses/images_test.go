package warehouses

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/credentials"
)

var (
	imageCreds      = &credentials.Credentials{Username: "kargo", Password: "img-s3cret"}
	wrongImageCreds = &credentials.Credentials{Username: "kargo", Password: "img-guess"}

	sourceAnnotation   = map[string]string{"org.opencontainers.image.source": "https://github.com/example/app"}
	revisionAnnotation = map[string]string{"org.opencontainers.image.revision": "abc123"}
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// imageRegistry is an OCI registry served in process, in the open and
// behind basic auth (imageCreds), holding "app", whose build dates
// disagree with its tags:
//
//	1.0.0         linux/amd64 built 2024-03-01
//	1.1.0         linux/amd64 built 2024-01-01
//	1.2.0, latest index: linux/amd64 2024-02-01, linux/arm64 2024-02-15,
//	              an attestation; annotated with its source
//	2.0.0         linux/arm64 built 2023-12-01, annotated with its revision
//
// and "attested", whose 1.0.0 is an index of an attestation only.
type imageRegistry struct {
	open, private string // "app"'s repository URLs
	attested      string
	digests       map[string]string
	annotations   map[string]map[string]string
	log           *requestLog
}

func newImageRegistry(t *testing.T) *imageRegistry {
	t.Helper()
	rl := &requestLog{}
	h := rl.wrap(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	open := httptest.NewServer(h)
	t.Cleanup(open.Close)
	closed := httptest.NewServer(requireImageCreds(h))
	t.Cleanup(closed.Close)
	host := strings.TrimPrefix(open.URL, "http://")
	r := &imageRegistry{open: host + "/app", private: strings.TrimPrefix(closed.URL, "http://") + "/app",
		attested: host + "/attested", digests: map[string]string{}, annotations: map[string]map[string]string{}, log: rl}
	r.push(t, "1.0.0", testImage(t, "2024-03-01", "linux", "amd64"), nil)
	r.push(t, "1.1.0", testImage(t, "2024-01-01", "linux", "amd64"), nil)
	multi := testIndex(t, map[string]v1.Image{
		"linux/amd64":     testImage(t, "2024-02-01", "linux", "amd64"),
		"linux/arm64":     testImage(t, "2024-02-15", "linux", "arm64"),
		"unknown/unknown": testImage(t, "2024-06-01", "unknown", "unknown"),
	})
	r.push(t, "1.2.0", multi, sourceAnnotation)
	r.push(t, "latest", multi, sourceAnnotation)
	r.push(t, "2.0.0", testImage(t, "2023-12-01", "linux", "arm64"), revisionAnnotation)
	attestation := testIndex(t, map[string]v1.Image{"unknown/unknown": testImage(t, "2024-06-01", "unknown", "unknown")})
	write(t, r.attested+":1.0.0", attestation)
	return r
}

// push tags an image or index, annotated with annotations.
func (r *imageRegistry) push(t *testing.T, tag string, img any, annotations map[string]string) {
	t.Helper()
	if annotations != nil {
		img = mutate.Annotations(img.(partial.WithRawManifest), annotations)
	}
	r.digests[tag] = write(t, r.open+":"+tag, img)
	r.annotations[tag] = annotations
}

func write(t *testing.T, ref string, img any) string {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	var d v1.Hash
	switch img := img.(type) {
	case v1.ImageIndex:
		err = remote.WriteIndex(tag, img)
		if err == nil {
			d, err = img.Digest()
		}
	case v1.Image:
		err = remote.Write(tag, img)
		if err == nil {
			d, err = img.Digest()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// testImage is a random image built on day for os/arch.
func testImage(t *testing.T, built, os, arch string) v1.Image {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: day(built)}
	cfg.OS, cfg.Architecture = os, arch
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	return img
}

// testIndex lists the images under their "os/arch" platforms.
func testIndex(t *testing.T, images map[string]v1.Image) v1.ImageIndex {
	t.Helper()
	var adds []mutate.IndexAddendum
	for p, img := range images {
		os, arch, _ := strings.Cut(p, "/")
		adds = append(adds, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: os, Architecture: arch}}})
	}
	return mutate.AppendManifests(empty.Index, adds...)
}

// requireImageCreds lets through only requests with imageCreds.
func requireImageCreds(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != imageCreds.Username || p != imageCreds.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="images"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// requestLog counts a registry's requests by kind ("GET blobs") and the
// most it served at once.
type requestLog struct {
	mu                    sync.Mutex
	counts                map[string]int
	inFlight, maxInFlight int
}

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := r.Method + " other"
		for _, k := range []string{"blobs", "manifests", "tags"} {
			if strings.Contains(r.URL.Path, "/"+k+"/") {
				kind = r.Method + " " + k
			}
		}
		l.mu.Lock()
		if l.counts == nil {
			l.counts = map[string]int{}
		}
		l.counts[kind]++
		l.inFlight++
		l.maxInFlight = max(l.maxInFlight, l.inFlight)
		l.mu.Unlock()
		defer func() { l.mu.Lock(); l.inFlight--; l.mu.Unlock() }()
		h.ServeHTTP(w, r)
	})
}

func (l *requestLog) reset() (counts map[string]int, maxInFlight int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts, maxInFlight = l.counts, l.maxInFlight
	l.counts, l.maxInFlight = nil, 0
	return counts, maxInFlight
}

// imageRef is what a user reads of a discovered reference.
type imageRef struct {
	Tag, Digest, Built string
	Annotations        map[string]string
}

// ref is tag as discovered, built on built (for an index under a
// platform: the platform's build date).
func (r *imageRegistry) ref(tag, built string) imageRef {
	return imageRef{Tag: tag, Digest: r.digests[tag], Built: built, Annotations: r.annotations[tag]}
}

func refsOf(res kargoapi.ImageDiscoveryResult) []imageRef {
	var out []imageRef
	for _, r := range res.References {
		ref := imageRef{Tag: r.Tag, Digest: r.Digest, Annotations: r.Annotations}
		if r.CreatedAt != nil {
			ref.Built = r.CreatedAt.UTC().Format(time.DateOnly)
		}
		out = append(out, ref)
	}
	return out
}

// imageCase is a discovery and what it must give: the references, or an
// error beginning with wantErr.
type imageCase struct {
	name    string
	sub     kargoapi.ImageSubscription
	creds   *credentials.Credentials
	want    []imageRef
	wantErr string
}

func runImageCases(t *testing.T, cases []imageCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			res, err := discoverImages(context.Background(), tt.sub, tt.creds)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one beginning with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := refsOf(res); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if res.RepoURL != tt.sub.RepoURL || res.Platform != tt.sub.Platform {
				t.Errorf("result is of %q, %q; want %q, %q", res.RepoURL, res.Platform, tt.sub.RepoURL, tt.sub.Platform)
			}
		})
	}
}

func TestImageSelection(t *testing.T) {
	r := newImageRegistry(t)
	newest := kargoapi.ImageSubscription{RepoURL: r.open, ImageSelectionStrategy: kargoapi.ImageSelectionStrategyNewestBuild}
	with := func(sub kargoapi.ImageSubscription, edit func(*kargoapi.ImageSubscription)) kargoapi.ImageSubscription {
		edit(&sub)
		return sub
	}
	runImageCases(t, []imageCase{
		{name: "SemVer: greatest version first, whatever its build date",
			sub: kargoapi.ImageSubscription{RepoURL: r.open, StrictSemvers: true},
			want: []imageRef{r.ref("2.0.0", "2023-12-01"), r.ref("1.2.0", "2024-02-15"),
				r.ref("1.1.0", "2024-01-01"), r.ref("1.0.0", "2024-03-01")}},
		{name: "NewestBuild: newest build first, an index dated by its newest image, ties by tag",
			sub: newest,
			want: []imageRef{r.ref("1.0.0", "2024-03-01"), r.ref("latest", "2024-02-15"), r.ref("1.2.0", "2024-02-15"),
				r.ref("1.1.0", "2024-01-01"), r.ref("2.0.0", "2023-12-01")}},
		{name: "NewestBuild: discoveryLimit",
			sub:  with(newest, func(s *kargoapi.ImageSubscription) { s.DiscoveryLimit = 2 }),
			want: []imageRef{r.ref("1.0.0", "2024-03-01"), r.ref("latest", "2024-02-15")}},
		{name: "NewestBuild: allowTags and ignoreTags",
			sub:  with(newest, func(s *kargoapi.ImageSubscription) { s.AllowTags = `^1\.`; s.IgnoreTags = []string{"1.0.0"} }),
			want: []imageRef{r.ref("1.2.0", "2024-02-15"), r.ref("1.1.0", "2024-01-01")}},
		{name: "NewestBuild on linux/arm64: images without it skipped, an index recorded by its own digest",
			sub:  with(newest, func(s *kargoapi.ImageSubscription) { s.Platform = "linux/arm64" }),
			want: []imageRef{r.ref("latest", "2024-02-15"), r.ref("1.2.0", "2024-02-15"), r.ref("2.0.0", "2023-12-01")}},
		{name: "NewestBuild on linux/amd64: an index dated by its linux/amd64 image",
			sub:  with(newest, func(s *kargoapi.ImageSubscription) { s.Platform = "linux/amd64"; s.DiscoveryLimit = 3 }),
			want: []imageRef{r.ref("1.0.0", "2024-03-01"), r.ref("latest", "2024-02-01"), r.ref("1.2.0", "2024-02-01")}},
		{name: "SemVer on linux/arm64: discoveryLimit counts images of the platform",
			sub:  kargoapi.ImageSubscription{RepoURL: r.open, StrictSemvers: true, Platform: "linux/arm64", DiscoveryLimit: 2},
			want: []imageRef{r.ref("2.0.0", "2023-12-01"), r.ref("1.2.0", "2024-02-15")}},
		{name: "Lexical on linux/amd64",
			sub: kargoapi.ImageSubscription{RepoURL: r.open, ImageSelectionStrategy: kargoapi.ImageSelectionStrategyLexical,
				Platform: "linux/amd64", AllowTags: `^\d`},
			want: []imageRef{r.ref("1.2.0", "2024-02-01"), r.ref("1.1.0", "2024-01-01"), r.ref("1.0.0", "2024-03-01")}},
		{name: "a platform's variant must match too",
			sub: kargoapi.ImageSubscription{RepoURL: r.open, Platform: "linux/arm64/v8"}},
		{name: "Digest: the image the tag references",
			sub:  kargoapi.ImageSubscription{RepoURL: r.open, ImageSelectionStrategy: kargoapi.ImageSelectionStrategyDigest, SemverConstraint: "latest"},
			want: []imageRef{r.ref("latest", "2024-02-15")}},
		{name: "Digest on linux/arm64: the index's digest",
			sub: kargoapi.ImageSubscription{RepoURL: r.open, ImageSelectionStrategy: kargoapi.ImageSelectionStrategyDigest,
				SemverConstraint: "latest", Platform: "linux/arm64"},
			want: []imageRef{r.ref("latest", "2024-02-15")}},
		{name: "Digest on linux/arm64 of an image without it: nothing",
			sub: kargoapi.ImageSubscription{RepoURL: r.open, ImageSelectionStrategy: kargoapi.ImageSelectionStrategyDigest,
				SemverConstraint: "1.0.0", Platform: "linux/arm64"}},
		{name: "Digest of a tag that does not exist: nothing",
			sub: kargoapi.ImageSubscription{RepoURL: r.open, ImageSelectionStrategy: kargoapi.ImageSelectionStrategyDigest, SemverConstraint: "nope"}},
	})
}

func TestImageErrors(t *testing.T) {
	r := newImageRegistry(t)
	selector := func(repo string) string {
		return `error discovering latest images "` + repo + `": error creating image selector for image "` + repo + `": `
	}
	discovery := func(repo string) string {
		return `error discovering latest images "` + repo + `": error discovering newest applicable images "` + repo + `": `
	}
	runImageCases(t, []imageCase{
		{name: "platform without an architecture",
			sub:     kargoapi.ImageSubscription{RepoURL: r.open, Platform: "linux"},
			wantErr: selector(r.open) + `error parsing platform constraint "linux": error parsing platform constraint "linux"`},
		{name: "Digest without a tag",
			sub:     kargoapi.ImageSubscription{RepoURL: r.open, ImageSelectionStrategy: kargoapi.ImageSelectionStrategyDigest},
			wantErr: selector(r.open) + "digest selection strategy requires a constraint"},
		{name: "unknown strategy",
			sub:     kargoapi.ImageSubscription{RepoURL: r.open, ImageSelectionStrategy: "Oldest"},
			wantErr: selector(r.open) + `invalid image selection strategy "Oldest"`},
		{name: "bad allowTags",
			sub:     kargoapi.ImageSubscription{RepoURL: r.open, AllowTags: "("},
			wantErr: selector(r.open) + `error compiling regular expression "(": `},
		{name: "bad repository URL",
			sub:     kargoapi.ImageSubscription{RepoURL: "Reg/App"},
			wantErr: selector("Reg/App") + `error creating repository client for image "Reg/App": error parsing image repo URL Reg/App: `},
		{name: "an index of attestations only",
			sub: kargoapi.ImageSubscription{RepoURL: r.attested},
			wantErr: discovery(r.attested) + `error retrieving image with tag "1.0.0": error getting image from descriptor for tag "1.0.0" from repo URL ` +
				r.attested + ": empty V2 manifest list or OCI index is not supported"},
	})
}

func TestImageCredentials(t *testing.T) {
	r := newImageRegistry(t)
	runImageCases(t, []imageCase{
		{name: "right credentials",
			sub:   kargoapi.ImageSubscription{RepoURL: r.private, ImageSelectionStrategy: kargoapi.ImageSelectionStrategyNewestBuild, DiscoveryLimit: 1},
			creds: imageCreds,
			want:  []imageRef{r.ref("1.0.0", "2024-03-01")}},
	})
	for _, tt := range []struct {
		name  string
		creds *credentials.Credentials
		hint  string
	}{
		{"wrong credentials", wrongImageCreds, "(the registry refused the image credentials stored for this repository)"},
		{"no credentials", nil, "(no image credentials are stored for this repository)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := discoverImages(context.Background(), kargoapi.ImageSubscription{RepoURL: r.private}, tt.creds)
			want := `error discovering latest images "` + r.private + `": error discovering newest applicable images "` + r.private +
				`": error listing tags: error listing tags for repo URL ` + r.private + ": "
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "401 Unauthorized") ||
				!strings.HasSuffix(err.Error(), tt.hint) {
				t.Fatalf("got %v, want an error beginning with %q, saying 401 Unauthorized, ending with %q", err, want, tt.hint)
			}
			if strings.Contains(err.Error(), wrongImageCreds.Password) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// TestImageNewestBuildWork checks what NewestBuild costs a registry: a
// first poll downloads each image's config, a second only asks each tag
// for its digest, and neither has more than newestBuildConcurrency
// requests open at once.
func TestImageNewestBuildWork(t *testing.T) {
	defer func(c *factsCache) { imageFactsCache = c }(imageFactsCache)
	imageFactsCache = newFactsCache(imageFactsCacheSize)
	r := newImageRegistry(t)
	r.log.reset()
	sub := kargoapi.ImageSubscription{RepoURL: r.open, ImageSelectionStrategy: kargoapi.ImageSelectionStrategyNewestBuild, Platform: "linux/arm64"}
	first, err := discoverImages(context.Background(), sub, nil)
	if err != nil {
		t.Fatal(err)
	}
	counts, most := r.log.reset()
	if counts["GET blobs"] == 0 || most > newestBuildConcurrency {
		t.Errorf("first poll: %d configs downloaded, %d requests at once; want some, at most %d", counts["GET blobs"], most, newestBuildConcurrency)
	}
	second, err := discoverImages(context.Background(), sub, nil)
	if err != nil {
		t.Fatal(err)
	}
	counts, _ = r.log.reset()
	if counts["GET blobs"]+counts["GET manifests"] != 0 || counts["HEAD manifests"] != len(r.digests) {
		t.Errorf("second poll: %v; want only a HEAD per tag (%d)", counts, len(r.digests))
	}
	if !reflect.DeepEqual(refsOf(first), refsOf(second)) {
		t.Errorf("second poll found %+v, first %+v", refsOf(second), refsOf(first))
	}
}

func TestImageFactsCacheBound(t *testing.T) {
	c := newFactsCache(2)
	a, b, d := &imageFacts{os: "a"}, &imageFacts{os: "b"}, &imageFacts{os: "d"}
	c.put("a", a)
	c.put("b", b)
	c.get("a") // a is now more recently used than b
	c.put("d", d)
	if c.get("a") != a || c.get("b") != nil || c.get("d") != d {
		t.Errorf("after a, b, a read, d: a=%v b=%v d=%v; want b evicted, the least recently used", c.get("a"), c.get("b"), c.get("d"))
	}
}

func TestImagePlatformConstraint(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{{"linux/arm64", "linux/arm64", true}, {"linux/arm/v7", "linux/arm/v7", true}, {"linux", "", false}} {
		p, err := parsePlatformConstraint(tt.in)
		if (err == nil) != tt.ok || (err == nil && p.String() != tt.want) {
			t.Errorf("parsePlatformConstraint(%q) = %v, %v; want %q, ok %v", tt.in, p, err, tt.want, tt.ok)
		}
	}
}

func TestImageTagOrder(t *testing.T) {
	tags := []string{"1.0.0", "v1.2.0", "1.10.0", "2.0.0-rc.1", "1.2", "latest", "abc1234", "2024-01-02", "2024-03-01"}
	tests := []struct {
		name string
		sub  kargoapi.ImageSubscription
		want []string
	}{
		{"semver strict", kargoapi.ImageSubscription{StrictSemvers: true},
			[]string{"2.0.0-rc.1", "1.10.0", "v1.2.0", "1.0.0"}},
		{"semver constraint", kargoapi.ImageSubscription{StrictSemvers: true, SemverConstraint: "^1.0.0"},
			[]string{"1.10.0", "v1.2.0", "1.0.0"}},
		{"semver loose", kargoapi.ImageSubscription{SemverConstraint: "~1.2"},
			[]string{"v1.2.0", "1.2"}},
		{"semver ignore", kargoapi.ImageSubscription{StrictSemvers: true, IgnoreTags: []string{"2.0.0-rc.1"}},
			[]string{"1.10.0", "v1.2.0", "1.0.0"}},
		{"lexical allow", kargoapi.ImageSubscription{ImageSelectionStrategy: kargoapi.ImageSelectionStrategyLexical, AllowTags: `^\d{4}-`},
			[]string{"2024-03-01", "2024-01-02"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allowed, err := tagFilter(tt.sub.AllowTags, tt.sub.IgnoreTags)
			if err != nil {
				t.Fatal(err)
			}
			got, err := orderTags(tt.sub, tags, allowed)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestImageInsecureSkipTLSVerify checks that a registry with a
// certificate no one signed is read only when the subscription says so.
func TestImageInsecureSkipTLSVerify(t *testing.T) {
	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	repo := strings.TrimPrefix(srv.URL, "https://") + "/app"
	tag, err := name.NewTag(repo + ":1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, testImage(t, "2024-03-01", "linux", "amd64"), remote.WithTransport(srv.Client().Transport)); err != nil {
		t.Fatal(err)
	}
	res, err := discoverImages(context.Background(), kargoapi.ImageSubscription{RepoURL: repo, InsecureSkipTLSVerify: true}, nil)
	if err != nil || len(res.References) != 1 || res.References[0].Tag != "1.0.0" {
		t.Errorf("insecureSkipTLSVerify: got %+v, %v; want 1.0.0", res.References, err)
	}
	_, err = discoverImages(context.Background(), kargoapi.ImageSubscription{RepoURL: repo}, nil)
	if err == nil || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
		t.Errorf("without insecureSkipTLSVerify: got %v, want an error about the certificate", err)
	}
}

// A registry that answers without end is cut off: one budget of bytes
// for the whole discovery.
func TestImageResponsesBounded(t *testing.T) {
	defer func(n int64, c *factsCache) { maxImageResponseBytes, imageFactsCache = n, c }(maxImageResponseBytes, imageFactsCache)
	imageFactsCache = newFactsCache(imageFactsCacheSize)
	r := newImageRegistry(t)
	sub := kargoapi.ImageSubscription{RepoURL: r.open, ImageSelectionStrategy: kargoapi.ImageSelectionStrategyNewestBuild}
	if _, err := discoverImages(context.Background(), sub, nil); err != nil {
		t.Fatalf("within the bound: %v", err)
	}
	imageFactsCache = newFactsCache(imageFactsCacheSize)
	maxImageResponseBytes = 200 // less than the configs of the tags
	if _, err := discoverImages(context.Background(), sub, nil); !errors.Is(err, errImageResponseTooLarge) {
		t.Errorf("over the bound: %v, want %v", err, errImageResponseTooLarge)
	}
}
