package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// A Warehouse subscribed to a chart of a classic Helm repository (an
// index.yaml the test serves as a static file) and one subscribed to an
// OCI chart: each makes Freight of the newest version meeting its
// constraint, and a version added to the index is new Freight after a
// refresh.
func TestWarehouseChartDiscovery(t *testing.T) {
	var index atomic.Value
	index.Store(helmIndex("1.0.0", "1.1.0", "2.0.0"))
	helm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/charts/index.yaml" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(index.Load().(string)))
	}))
	t.Cleanup(helm.Close)
	repo, push := imageRegistry(t) // an OCI registry: a chart is an artifact with a version tag
	push("0.1.0")
	push("0.2.0_build.7")
	oci := "oci://" + repo

	s := gitServer(t, "credentials: []\n", nil)
	k := newKProject(t, s)
	k.createStage("test", direct(), nil) // makes the project
	k.createWarehouse(fmt.Sprintf(`{"metadata":{"name":"classic"},"spec":{"subscriptions":[{"chart":{"repoURL":%q,"name":"demo","semverConstraint":"^1.0.0"}}]}}`, helm.URL+"/charts"))
	k.createWarehouse(fmt.Sprintf(`{"metadata":{"name":"oci"},"spec":{"subscriptions":[{"chart":{"repoURL":%q}}]}}`, oci))

	chartOf := func(w, version string) kargoapi.Chart {
		t.Helper()
		var c kargoapi.Chart
		eventually(t, 30*time.Second, "Freight of Warehouse "+w+" with chart "+version, func() bool {
			for _, f := range k.freightOf(w) {
				if len(f.Charts) == 1 && f.Charts[0].Version == version {
					c = f.Charts[0]
					return true
				}
			}
			return false
		})
		return c
	}
	if c := chartOf("classic", "1.1.0"); c.Name != "demo" || c.RepoURL != helm.URL+"/charts" {
		t.Errorf("classic chart Freight: %+v", c)
	}
	if c := chartOf("oci", "0.2.0+build.7"); c.RepoURL != oci {
		t.Errorf("OCI chart Freight: %+v", c)
	}
	index.Store(helmIndex("1.0.0", "1.1.0", "2.0.0", "1.2.0"))
	if w := k.refreshWarehouse("classic"); strings.Join(w.Status.DiscoveredArtifacts.Charts[0].Versions, " ") != "1.2.0 1.1.0 1.0.0" {
		t.Errorf("discovered %+v", w.Status.DiscoveredArtifacts.Charts)
	}
	chartOf("classic", "1.2.0")
}

func helmIndex(versions ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  demo:\n")
	for _, v := range versions {
		fmt.Fprintf(&b, "  - name: demo\n    version: %s\n    urls: [demo-%s.tgz]\n", v, v)
	}
	b.WriteString("  other:\n  - name: other\n    version: 9.9.9\n")
	return b.String()
}
