package steps

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

const kustomization = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deploy.yaml
# the app's images
images:
- name: redis
  newTag: "6.0"
- name: keep
  newName: my/keep
  newTag: "1.0"
`

// As in Kargo, the commit message lists every image of the merged images
// field, the ones kept included (Kargo merges into the targets' map, then
// words the message from it).
func TestKustomizeSetImage(t *testing.T) {
	for _, c := range []struct {
		name, images string
		freight      map[string]kargoapi.FreightReference
		wantMsg      string
		want         []string // lines of the images field
	}{
		{"a tag", `[{"image":"nginx","tag":"1.21.0"}]`, nil,
			"Updated . to use new images\n\n- my/keep:1.0\n- nginx:1.21.0\n- redis:6.0",
			[]string{"- name: keep", "  newName: my/keep", "- name: nginx", "  newTag: 1.21.0", "- name: redis"}},
		{"digest over tag, name, newName", `[{"image":"ghcr.io/x/app","name":"app","newName":"ghcr.io/x/app","digest":"sha256:abc"}]`, nil,
			"Updated . to use new images\n\n- ghcr.io/x/app@sha256:abc\n- my/keep:1.0\n- redis:6.0",
			[]string{"- name: app", "  newName: ghcr.io/x/app", "  digest: sha256:abc"}},
		{"* keeps the current value", `[{"image":"keep","newName":"*","tag":"2.0"}]`, nil,
			"Updated . to use new images\n\n- my/keep:2.0\n- redis:6.0",
			[]string{"- name: keep", "  newName: my/keep", "  newTag: \"2.0\""}},
		{"from the Freight", `[]`, map[string]kargoapi.FreightReference{
			"Warehouse/w1": {Origin: kargoapi.FreightOrigin{Kind: "Warehouse", Name: "w1"}, Images: []kargoapi.Image{{RepoURL: "nginx", Digest: "sha256:123"}}},
			"Warehouse/w2": {Origin: kargoapi.FreightOrigin{Kind: "Warehouse", Name: "w2"}, Images: []kargoapi.Image{{RepoURL: "redis", Tag: "6.2.5"}}},
		}, "Updated . to use new images\n\n- my/keep:1.0\n- nginx@sha256:123\n- redis:6.2.5",
			[]string{"- name: nginx", "  digest: sha256:123", "- name: redis", "  newTag: 6.2.5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := newStepContext(t, "")
			writeFiles(t, sc.WorkDir, map[string]string{"kustomization.yaml": kustomization})
			sc.Freight = kargoapi.FreightCollection{Freight: c.freight}
			for k := range c.freight {
				sc.FreightRequests = append(sc.FreightRequests, kargoapi.FreightRequest{Origin: c.freight[k].Origin})
			}
			out := mustSucceed(t, kustomizeImageSetter{}, sc, `{"path":".","images":`+c.images+`}`)
			if want := map[string]any{"commitMessage": c.wantMsg}; !reflect.DeepEqual(out, want) {
				t.Errorf("output %q, want %q", out, want)
			}
			got := readFile(t, filepath.Join(sc.WorkDir, "kustomization.yaml"))
			for _, l := range c.want {
				if !strings.Contains(got, l+"\n") {
					t.Errorf("no %q in\n%s", l, got)
				}
			}
			if !strings.Contains(got, "# the app's images") || !strings.Contains(got, "- deploy.yaml") {
				t.Errorf("comments or resources lost:\n%s", got)
			}
		})
	}
}

func TestKustomizeSetImageErrors(t *testing.T) {
	sc := newStepContext(t, "")
	if _, err := run(t, kustomizeImageSetter{}, sc, `{"path":".","images":[{"image":"nginx","tag":"1"}]}`); err == nil ||
		err.Error() != `could not discover kustomization file: could not find any Kustomization files in "."` {
		t.Errorf("none: %v", err)
	}
	writeFiles(t, sc.WorkDir, map[string]string{"kustomization.yaml": kustomization, "kustomization.yml": kustomization})
	if _, err := run(t, kustomizeImageSetter{}, sc, `{"path":".","images":[{"image":"nginx","tag":"1"}]}`); err == nil ||
		!strings.Contains(err.Error(), `ambiguous result: found multiple Kustomization files in "."`) {
		t.Errorf("two: %v", err)
	}
	if _, err := run(t, kustomizeImageSetter{}, sc, `{"path":".","images":[{"image":"nginx","tag":"1","digest":"sha256:x"}]}`); err == nil ||
		!strings.Contains(err.Error(), "invalid kustomize-set-image config: images.0: Must validate one and only one schema (oneOf)") {
		t.Errorf("tag and digest: %v", err)
	}
	// Two requested origins with one image repository: ambiguous.
	o1, o2 := kargoapi.FreightOrigin{Kind: "Warehouse", Name: "a"}, kargoapi.FreightOrigin{Kind: "Warehouse", Name: "b"}
	sc.FreightRequests = []kargoapi.FreightRequest{{Origin: o1}, {Origin: o2}}
	sc.Freight = kargoapi.FreightCollection{Freight: map[string]kargoapi.FreightReference{
		"Warehouse/a": {Origin: o1, Images: []kargoapi.Image{{RepoURL: "nginx", Tag: "1"}}},
		"Warehouse/b": {Origin: o2, Images: []kargoapi.Image{{RepoURL: "nginx", Tag: "2"}}},
	}}
	_ = os.Remove(filepath.Join(sc.WorkDir, "kustomization.yml"))
	if _, err := run(t, kustomizeImageSetter{}, sc, `{"path":".","images":[]}`); err == nil || err.Error() !=
		"manual configuration required due to ambiguous result: multiple requested Freight could potentially provide a container image from repository nginx" {
		t.Errorf("ambiguous: %v", err)
	}
}

func TestKustomizeBuild(t *testing.T) {
	files := map[string]string{
		"src/base/kustomization.yaml":   "resources:\n- deploy.yaml\n",
		"src/base/deploy.yaml":          "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: nginx\n",
		"src/test/kustomization.yaml":   "namespace: test\nresources:\n- ../base\n- cm.yaml\nimages:\n- name: nginx\n  newTag: 1.27.0\n",
		"src/test/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n",
		"src/escape/kustomization.yaml": "resources:\n- link/secret.yaml\n",
	}
	sc := newStepContext(t, "")
	writeFiles(t, sc.WorkDir, files)
	mustSucceed(t, kustomizeBuilder{}, sc, `{"path":"src/test","outPath":"out/manifests.yaml"}`)
	got := readFile(t, filepath.Join(sc.WorkDir, "out/manifests.yaml"))
	if !strings.Contains(got, "image: nginx:1.27.0") || !strings.Contains(got, "namespace: test") || strings.Count(got, "\n---\n") != 1 {
		t.Errorf("built:\n%s", got)
	}
	mustSucceed(t, kustomizeBuilder{}, sc, `{"path":"src/test","outPath":"out/dir"}`)
	entries, _ := os.ReadDir(filepath.Join(sc.WorkDir, "out/dir"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "test-configmap-cfg.yaml,test-deployment-app.yaml" {
		t.Errorf("files %v", names)
	}

	// Nothing remote: refused before kustomize fetches anything.
	var hits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: internal\n"))
	}))
	defer internal.Close()
	writeFiles(t, sc.WorkDir, map[string]string{
		"src/remote/kustomization.yaml": "resources:\n- ../nested\n",
		"src/nested/kustomization.yaml": "resources:\n- " + internal.URL + "/secret.yaml\n",
		"src/git/kustomization.yaml":    "resources:\n- github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v1.0.6\n",
	})
	for _, p := range []string{"src/remote", "src/git"} {
		if _, err := run(t, kustomizeBuilder{}, sc, `{"path":"`+p+`","outPath":"o.yaml"}`); err == nil || !strings.Contains(err.Error(), "remote bases and resources are not loaded") {
			t.Errorf("%s: %v", p, err)
		}
	}
	if hits.Load() != 0 {
		t.Errorf("%d requests to the internal service", hits.Load())
	}

	// Nothing outside the working directory: not by "..", not by a link.
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"})
	if err := os.Symlink(outside, filepath.Join(sc.WorkDir, "src/escape/link")); err != nil {
		t.Fatal(err)
	}
	for cfg, want := range map[string]string{
		`{"path":"src/escape","outPath":"o.yaml"}`: "is not a file or directory of the Promotion's working directory",
		`{"path":"../x","outPath":"o.yaml"}`:       `path "../x" has a ".."`,
		`{"path":"src/test","outPath":"/tmp/o"}`:   `path "/tmp/o" is absolute`,
	} {
		if _, err := run(t, kustomizeBuilder{}, sc, cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
}
