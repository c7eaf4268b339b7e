package warehouses

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/credentials"
)

// chartIndex is a classic repository's index.yaml: two charts, and for
// "app" versions that are not semantic versions (skipped), a prerelease,
// one with a "v", and 1.10 unquoted (a YAML number, yet a version).
const chartIndex = `apiVersion: v1
entries:
  app:
  - version: 1.2.0
  - version: 1.10
  - version: 2.0.0-rc.1
  - version: 1.10.0
  - version: v0.9.0
  - version: not-a-version
  - version: latest
  other:
  - version: 3.0.0
generated: "2024-01-01T00:00:00Z"
`

var (
	rightCreds = &credentials.Credentials{Username: "kargo", Password: "s3cret"}
	wrongCreds = &credentials.Credentials{Username: "kargo", Password: "guess"}
)

// requireBasicAuth lets through only requests with rightCreds.
func requireBasicAuth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != rightCreds.Username || p != rightCreds.Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="charts"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// chartRepository serves chartIndex at /charts (public) and /private
// (rightCreds only), and an index that is not YAML at /broken. Paths are
// matched as sent (no ServeMux, which would redirect "//index.yaml" to
// "/index.yaml" and hide a URL built wrong).
func chartRepository(t *testing.T) *httptest.Server {
	t.Helper()
	index := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, chartIndex)
	})
	private := requireBasicAuth(index)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/charts/index.yaml":
			index(w, r)
		case "/private/index.yaml":
			private.ServeHTTP(w, r)
		case "/broken/index.yaml":
			_, _ = io.WriteString(w, "entries: [")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// chartCase is a discovery and what it must give: the versions, or an
// error beginning with wantErr.
type chartCase struct {
	name    string
	sub     kargoapi.ChartSubscription
	creds   *credentials.Credentials
	want    []string
	wantErr string
}

func runChartCases(t *testing.T, client *http.Client, cases []chartCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := discoverCharts(context.Background(), tc.sub, tc.creds, client)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one beginning with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := kargoapi.ChartDiscoveryResult{
				RepoURL:          tc.sub.RepoURL,
				Name:             tc.sub.Name,
				SemverConstraint: tc.sub.SemverConstraint,
				Versions:         tc.want,
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestDiscoverChartsClassic(t *testing.T) {
	srv := chartRepository(t)
	charts, private := srv.URL+"/charts", srv.URL+"/private"
	prefix := func(chart, repo string) string {
		return fmt.Sprintf("error discovering latest chart versions for chart %q in repository %q: ", chart, repo)
	}
	runChartCases(t, srv.Client(), []chartCase{
		{name: "semantic versions, greatest first",
			sub:  kargoapi.ChartSubscription{RepoURL: charts, Name: "app"},
			want: []string{"2.0.0-rc.1", "1.10.0", "1.10", "1.2.0", "v0.9.0"}},
		{name: "trailing slash",
			sub:  kargoapi.ChartSubscription{RepoURL: charts + "/", Name: "other"},
			want: []string{"3.0.0"}},
		{name: "constraint",
			sub:  kargoapi.ChartSubscription{RepoURL: charts, Name: "app", SemverConstraint: "^1.2"},
			want: []string{"1.10.0", "1.10", "1.2.0"}},
		{name: "discovery limit",
			sub:  kargoapi.ChartSubscription{RepoURL: charts, Name: "app", DiscoveryLimit: 2},
			want: []string{"2.0.0-rc.1", "1.10.0"}},
		{name: "chart not in the index",
			sub:  kargoapi.ChartSubscription{RepoURL: charts, Name: "missing"},
			want: nil},
		{name: "basic auth",
			sub:   kargoapi.ChartSubscription{RepoURL: private, Name: "other"},
			creds: rightCreds,
			want:  []string{"3.0.0"}},
		{name: "wrong credentials",
			sub:   kargoapi.ChartSubscription{RepoURL: private, Name: "app"},
			creds: wrongCreds,
			wantErr: prefix("app", private) + fmt.Sprintf(
				"error retrieving versions of chart %q from repository %q: received unexpected HTTP 401 when querying repository index at %q",
				"app", private, private+"/index.yaml")},
		{name: "no index",
			sub: kargoapi.ChartSubscription{RepoURL: srv.URL + "/nowhere", Name: "app"},
			wantErr: prefix("app", srv.URL+"/nowhere") + fmt.Sprintf(
				"error retrieving versions of chart %q from repository %q: received unexpected HTTP 404",
				"app", srv.URL+"/nowhere")},
		{name: "index not YAML",
			sub: kargoapi.ChartSubscription{RepoURL: srv.URL + "/broken", Name: "app"},
			wantErr: prefix("app", srv.URL+"/broken") + fmt.Sprintf(
				"error retrieving versions of chart %q from repository %q: error unmarshaling repository index from %q: ",
				"app", srv.URL+"/broken", srv.URL+"/broken/index.yaml")},
		{name: "invalid constraint",
			sub: kargoapi.ChartSubscription{RepoURL: charts, Name: "app", SemverConstraint: "not a constraint"},
			wantErr: prefix("app", charts) + fmt.Sprintf(
				`error filtering versions of chart %q from repository %q: error parsing constraint "not a constraint": `,
				"app", charts)},
		{name: "unknown scheme",
			sub: kargoapi.ChartSubscription{RepoURL: "ftp://example.com/charts", Name: "app"},
			wantErr: prefix("app", "ftp://example.com/charts") +
				`repository URL "ftp://example.com/charts" is invalid`},
	})
}

// chartRegistry serves an OCI registry in process, in the open and behind
// basic auth (rightCreds), with the chart "charts/app" tagged as Helm
// tags versions, and with tags that are not strict semantic versions.
func chartRegistry(t *testing.T) (public, private string) {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	open := httptest.NewServer(reg)
	t.Cleanup(open.Close)
	closed := httptest.NewServer(requireBasicAuth(reg))
	t.Cleanup(closed.Close)
	public = strings.TrimPrefix(open.URL, "http://") + "/charts/app"
	for _, tag := range []string{"0.1.0", "0.2.0", "1.0.0_build.1", "latest", "v1.1.0", "1.1"} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(public + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	return "oci://" + public, "oci://" + strings.TrimPrefix(closed.URL, "http://") + "/charts/app"
}

func TestDiscoverChartsOCI(t *testing.T) {
	public, private := chartRegistry(t)
	prefix := func(repo string) string {
		return fmt.Sprintf("error discovering latest chart versions in repository %q: error retrieving versions of chart \"\" from repository %q: ", repo, repo)
	}
	runChartCases(t, nil, []chartCase{
		{name: "strict semantic versions, greatest first, + for _",
			sub:  kargoapi.ChartSubscription{RepoURL: public},
			want: []string{"1.0.0+build.1", "0.2.0", "0.1.0"}},
		{name: "constraint",
			sub:  kargoapi.ChartSubscription{RepoURL: public, SemverConstraint: "<1.0.0"},
			want: []string{"0.2.0", "0.1.0"}},
		{name: "discovery limit",
			sub:  kargoapi.ChartSubscription{RepoURL: public, DiscoveryLimit: 2},
			want: []string{"1.0.0+build.1", "0.2.0"}},
		{name: "basic auth",
			sub:   kargoapi.ChartSubscription{RepoURL: private},
			creds: rightCreds,
			want:  []string{"1.0.0+build.1", "0.2.0", "0.1.0"}},
		{name: "wrong credentials",
			sub:   kargoapi.ChartSubscription{RepoURL: private},
			creds: wrongCreds,
			wantErr: prefix(private) + fmt.Sprintf(
				"error retrieving versions of chart from repository %q: GET http://%s/v2/charts/app/tags/list?n=1000: unexpected status code 401 Unauthorized",
				private, strings.TrimPrefix(strings.TrimSuffix(private, "/charts/app"), "oci://"))},
		{name: "registry not named",
			sub:     kargoapi.ChartSubscription{RepoURL: "oci://charts/app"},
			wantErr: prefix("oci://charts/app") + `error parsing repository URL "oci://charts/app": `},
	})
}

// TestDiscoverChartsBound checks that what is read of a repository is
// bounded: an index of exactly the bound is read, one byte more is not,
// and so is an OCI registry's listing.
func TestDiscoverChartsBound(t *testing.T) {
	defer func(n int64) { maxChartResponseBytes = n }(maxChartResponseBytes)
	srv := chartRepository(t)
	sub := kargoapi.ChartSubscription{RepoURL: srv.URL + "/charts", Name: "other"}

	maxChartResponseBytes = int64(len(chartIndex))
	got, err := discoverCharts(context.Background(), sub, nil, nil)
	if err != nil || !reflect.DeepEqual(got.Versions, []string{"3.0.0"}) {
		t.Errorf("index of exactly the bound: got %v, %v; want [3.0.0]", got.Versions, err)
	}

	maxChartResponseBytes = int64(len(chartIndex)) - 1
	_, err = discoverCharts(context.Background(), sub, nil, nil)
	want := fmt.Sprintf("error reading repository index from %q: response of the chart repository is too large: more than %d bytes",
		sub.RepoURL+"/index.yaml", maxChartResponseBytes)
	if !errors.Is(err, errChartResponseTooLarge) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("index over the bound: got %v, want an error ending with %q", err, want)
	}

	public, _ := chartRegistry(t)
	maxChartResponseBytes = 16
	_, err = discoverCharts(context.Background(), kargoapi.ChartSubscription{RepoURL: public}, nil, nil)
	if !errors.Is(err, errChartResponseTooLarge) {
		t.Errorf("OCI listing over the bound: got %v, want %v", err, errChartResponseTooLarge)
	}
}
