package controlplane

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// What kubectl asks of the embedded API server before anything else:
// discovery that lists flyte.org (plain and aggregated), the CRD's
// OpenAPI v2 and v3, and a version it can parse.
func TestDiscoveryOpenAPIAndVersion(t *testing.T) {
	cfg := shared.RESTConfig()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	found := false
	for _, g := range groups {
		found = found || g.Name == "flyte.org"
	}
	listed := false
	for _, rl := range resources {
		for _, r := range rl.APIResources {
			listed = listed || (rl.GroupVersion == "flyte.org/v1" && r.Name == "taskactions" && r.Namespaced)
		}
	}
	if !found || !listed {
		t.Errorf("discovery: flyte.org listed %v, taskactions listed %v", found, listed)
	}
	v, err := dc.ServerVersion()
	if err != nil || v.GitVersion != kubeLibraryVersion || v.Major != "1" {
		t.Errorf("version: %+v %v, want %s", v, err, kubeLibraryVersion)
	}
	rc, err := rest.UnversionedRESTClientFor(withCodec(cfg))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/openapi/v2":                   "org.flyte.v1.TaskAction",
		"/openapi/v3/apis/flyte.org/v1": "org.flyte.v1.TaskAction",
		"/api/v1/namespaces/anything":   `"phase":"Active"`,
	} {
		b, err := rc.Get().AbsPath(path).SetHeader("Accept", "application/json").DoRaw(t.Context())
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v, %d bytes, want %q in them", path, err, len(b), want)
		}
	}
	var doc struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	b, _ := rc.Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(t.Context())
	if json.Unmarshal(b, &doc) != nil || doc.Definitions["org.flyte.v1.TaskAction"] == nil {
		t.Errorf("/openapi/v2 lacks the TaskAction definition")
	}
}

// kubeLibraryVersion must follow go.mod: /version reports it.
func TestKubeLibraryVersionMatchesGoMod(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == "k8s.io/apiserver" {
			if want := "v1." + strings.TrimPrefix(r.Mod.Version, "v0."); want != kubeLibraryVersion {
				t.Fatalf("kubeLibraryVersion = %s, go.mod has k8s.io/apiserver %s: want %s", kubeLibraryVersion, r.Mod.Version, want)
			}
			return
		}
	}
	t.Fatal("go.mod requires no k8s.io/apiserver")
}
