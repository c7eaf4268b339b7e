package warehouses

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.yaml.in/yaml/v3"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/credentials"
)

// This file is Kargo v1.6.3's chart discovery (internal/helm/helm.go and
// internal/controller/warehouses/helm.go): the same repositories, the
// same choice and order of versions and the same error messages, so that
// a Warehouse reports here what it would report in Kargo.

// maxChartResponseBytes bounds how much one discovery reads from a chart
// repository: the index.yaml of a classic repository, or every response
// of an OCI registry together. Large public indexes are tens of MiB; a
// repository that sends more is refused rather than allowed to exhaust
// the server's memory. A variable so that tests can lower it.
var maxChartResponseBytes int64 = 64 << 20

// errChartResponseTooLarge is the error of reading past
// maxChartResponseBytes.
var errChartResponseTooLarge = errors.New("response of the chart repository is too large")

// defaultChartClient is used when discoverCharts is given no client: Kargo
// uses http.DefaultClient, which never times out, and a repository that
// stops answering would hold a discovery forever.
var defaultChartClient = &http.Client{Timeout: time.Minute}

// discoverCharts lists the versions of the chart a Warehouse subscribes
// to, newest first, as Kargo's Warehouse controller does, so that Freight
// can be made of the newest. The repository is a classic one (http:// or
// https://, whose index.yaml names the chart's versions; sub.Name is the
// chart) or one in an OCI registry (oci://, whose tags are the versions;
// sub.Name is empty). Only semantic versions are kept, those meeting
// sub.SemverConstraint, cut to sub.DiscoveryLimit.
//
// creds, if not nil, are sent as basic auth. client, if not nil, is used
// for the requests (its transport for an OCI registry, and its timeout
// for the whole listing). Whatever is read is bounded by
// maxChartResponseBytes.
func discoverCharts(ctx context.Context, sub kargoapi.ChartSubscription, creds *credentials.Credentials, client *http.Client) (kargoapi.ChartDiscoveryResult, error) {
	if client == nil {
		client = defaultChartClient
	}
	versions, err := chartVersions(ctx, sub.RepoURL, sub.Name, sub.SemverConstraint, creds, client)
	if err != nil {
		if sub.Name == "" {
			return kargoapi.ChartDiscoveryResult{}, fmt.Errorf(
				"error discovering latest chart versions in repository %q: %w", sub.RepoURL, err)
		}
		return kargoapi.ChartDiscoveryResult{}, fmt.Errorf(
			"error discovering latest chart versions for chart %q in repository %q: %w", sub.Name, sub.RepoURL, err)
	}
	return kargoapi.ChartDiscoveryResult{
		RepoURL:          sub.RepoURL,
		Name:             sub.Name,
		SemverConstraint: sub.SemverConstraint,
		Versions:         limit(versions, sub.DiscoveryLimit),
	}, nil
}

// chartVersions is Kargo's helm.DiscoverChartVersions: the chart's
// versions that are semantic versions meeting the constraint, greatest
// first. No versions (an unknown chart, say) is not an error.
func chartVersions(ctx context.Context, repoURL, chart, constraint string, creds *credentials.Credentials, client *http.Client) ([]string, error) {
	var (
		versions []string
		isOCI    bool
		err      error
	)
	switch {
	case strings.HasPrefix(repoURL, "http://"), strings.HasPrefix(repoURL, "https://"):
		versions, err = classicChartVersions(ctx, repoURL, chart, creds, client)
	case strings.HasPrefix(repoURL, "oci://"):
		versions, err = ociChartVersions(ctx, repoURL, creds, client)
		isOCI = true
	default:
		return nil, fmt.Errorf("repository URL %q is invalid", repoURL)
	}
	if err != nil {
		return nil, fmt.Errorf("error retrieving versions of chart %q from repository %q: %w", chart, repoURL, err)
	}

	semvers := chartSemvers(versions, isOCI)
	// As in Kargo, no versions means nothing to filter: the constraint is
	// not even parsed then.
	if len(semvers) == 0 {
		return nil, nil
	}
	if constraint != "" {
		if semvers, err = filterSemvers(semvers, constraint); err != nil {
			return nil, fmt.Errorf("error filtering versions of chart %q from repository %q: %w", chart, repoURL, err)
		}
	}

	slices.SortFunc(semvers, func(a, b *semver.Version) int {
		if n := b.Compare(a); n != 0 {
			return n
		}
		// Equal versions written differently ("1.0.0" and "1.0") are
		// ordered by how they are written, so that the order never
		// depends on the repository's.
		return strings.Compare(b.Original(), a.Original())
	})
	out := make([]string, len(semvers))
	for i, v := range semvers {
		out[i] = v.Original()
	}
	return out, nil
}

// chartSemvers are the versions that are semantic versions; the others
// are skipped. Helm pushes a chart to an OCI registry with its version as
// the tag, in strict form (major.minor.patch, no "v") and with "_" for
// "+", which tags may not contain: those tags are read back as the
// versions they stand for (the tag "1.0.0_build.1" is "1.0.0+build.1").
func chartSemvers(versions []string, isOCI bool) []*semver.Version {
	parse := semver.NewVersion
	if isOCI {
		parse = semver.StrictNewVersion
	}
	out := make([]*semver.Version, 0, len(versions))
	for _, v := range versions {
		if isOCI {
			v = strings.ReplaceAll(v, "_", "+")
		}
		if sv, err := parse(v); err == nil {
			out = append(out, sv)
		}
	}
	return out
}

// filterSemvers are the versions that meet the constraint.
func filterSemvers(versions []*semver.Version, constraint string) ([]*semver.Version, error) {
	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return nil, fmt.Errorf("error parsing constraint %q: %w", constraint, err)
	}
	return slices.DeleteFunc(versions, func(v *semver.Version) bool { return !c.Check(v) }), nil
}

// classicChartIndex is the part of a classic repository's index.yaml that
// discovery reads: each chart's versions.
type classicChartIndex struct {
	Entries map[string][]struct {
		Version string `yaml:"version"`
	} `yaml:"entries"`
}

// classicChartVersions are the versions of the chart that the index.yaml
// of a classic (HTTP/S) repository lists.
func classicChartVersions(ctx context.Context, repoURL, chart string, creds *credentials.Credentials, client *http.Client) ([]string, error) {
	indexURL := strings.TrimSuffix(repoURL, "/") + "/index.yaml"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, indexURL, nil)
	if err != nil {
		return nil, fmt.Errorf("error preparing HTTP/S request to %q: %w", indexURL, err)
	}
	if creds != nil {
		req.SetBasicAuth(creds.Username, creds.Password)
	}
	res, err := boundedClient(client).Do(req)
	if err != nil {
		return nil, fmt.Errorf("error querying repository index at %q: %w", indexURL, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("received unexpected HTTP %d when querying repository index at %q", res.StatusCode, indexURL)
	}
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("error reading repository index from %q: %w", indexURL, err)
	}
	// yaml.v3, as Kargo, keeps an unquoted version such as 1.10 as
	// written; a YAML-to-JSON decoder would make it the number 1.1.
	var index classicChartIndex
	if err := yaml.Unmarshal(body, &index); err != nil {
		return nil, fmt.Errorf("error unmarshaling repository index from %q: %w", indexURL, err)
	}
	entries := index.Entries[chart]
	versions := make([]string, len(entries))
	for i, e := range entries {
		versions[i] = e.Version
	}
	return versions, nil
}

// ociChartVersions are the tags of an OCI repository (one chart), listed
// with go-containerregistry through the client's transport and within
// its timeout. Loopback and private-network registries are spoken to
// over plain HTTP, as go-containerregistry decides (images.go does the
// same).
func ociChartVersions(ctx context.Context, repoURL string, creds *credentials.Credentials, client *http.Client) ([]string, error) {
	// Strict: the registry must be named. Otherwise go-containerregistry
	// would take "oci://registry/chart" for a Docker Hub repository and
	// send it the credentials meant for the host "registry".
	repo, err := name.NewRepository(strings.TrimPrefix(repoURL, "oci://"), name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("error parsing repository URL %q: %w", repoURL, err)
	}
	if client.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, client.Timeout)
		defer cancel()
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(boundedClient(client).Transport)}
	if creds != nil {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: creds.Username, Password: creds.Password}))
	}
	tags, err := remote.List(repo, opts...)
	if err != nil {
		return nil, fmt.Errorf("error retrieving versions of chart from repository %q: %w", repoURL, err)
	}
	return tags, nil
}
