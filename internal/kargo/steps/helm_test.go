package steps

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
)

// chartRepo serves a classic Helm repository (index.yaml and the chart's
// .tgz as static files) with examplechart 0.1.0 and 0.2.0.
func chartRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, v := range []string{"0.1.0", "0.2.0"} {
		src := t.TempDir()
		writeFiles(t, src, map[string]string{
			"Chart.yaml":               "apiVersion: v2\nname: examplechart\nversion: " + v + "\n",
			"templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: example-{{ .Chart.Version }}\n",
		})
		ch, err := loader.Load(src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chartutil.Save(ch, dir); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	idx, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv.URL
}

// Kargo's helm_chart_updater_test.go: a dependency's version set, the
// lock and charts/ updated; then helm-template renders it.
func TestHelmUpdateChartAndTemplate(t *testing.T) {
	repoURL := chartRepo(t)
	sc := newStepContext(t, "")
	writeFiles(t, sc.WorkDir, map[string]string{
		"testchart/Chart.yaml":             "apiVersion: v2\nname: testchart\nversion: 0.1.0\ndependencies:\n- name: examplechart\n  version: \">=0.0.1\"\n  repository: " + repoURL + "\n",
		"testchart/values.yaml":            "replicas: 1\nimage:\n  tag: old\n",
		"testchart/templates/deploy.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  namespace: {{ .Release.Namespace }}\nspec:\n  replicas: {{ .Values.replicas }}\n  template:\n    spec:\n      containers:\n      - image: nginx:{{ .Values.image.tag }}\n",
		"testchart/templates/tests/t.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n",
		"stage-values.yaml":                "replicas: 3\n",
	})
	out := mustSucceed(t, helmChartUpdater{creds: fixedCreds{}}, sc, `{"path":"testchart","charts":[{"repository":"`+repoURL+`","name":"examplechart","version":"0.1.0"}]}`)
	if want := "Updated chart dependencies for testchart\n\n- examplechart: 0.1.0"; out["commitMessage"] != want {
		t.Errorf("commitMessage %q, want %q", out["commitMessage"], want)
	}
	if c := readFile(t, filepath.Join(sc.WorkDir, "testchart/Chart.yaml")); !strings.Contains(c, "  version: 0.1.0\n") {
		t.Errorf("Chart.yaml:\n%s", c)
	}
	if l := readFile(t, filepath.Join(sc.WorkDir, "testchart/Chart.lock")); !strings.Contains(l, "version: 0.1.0") {
		t.Errorf("Chart.lock:\n%s", l)
	}
	if _, err := os.Stat(filepath.Join(sc.WorkDir, "testchart/charts/examplechart-0.1.0.tgz")); err != nil {
		t.Error(err)
	}
	// Again: nothing changes, no message (and the lock is kept as it was).
	lock := readFile(t, filepath.Join(sc.WorkDir, "testchart/Chart.lock"))
	if out := mustSucceed(t, helmChartUpdater{creds: fixedCreds{}}, sc, `{"path":"testchart","charts":[{"repository":"`+repoURL+`","name":"examplechart","version":"0.1.0"}]}`); out != nil {
		t.Errorf("no change: output %v", out)
	}
	if readFile(t, filepath.Join(sc.WorkDir, "testchart/Chart.lock")) != lock {
		t.Error("the lock was rewritten")
	}
	// The Helm home (credentials) is not left behind.
	if e, _ := os.ReadDir(sc.GitHome); len(e) != 0 {
		t.Errorf("GitHome has %d entries", len(e))
	}

	mustSucceed(t, helmTemplateRunner{creds: fixedCreds{}}, sc, `{"path":"testchart","outPath":"out/all.yaml","releaseName":"app",
		"valuesFiles":["stage-values.yaml"],"setValues":[{"key":"image.tag","value":"1.27.0"}],"skipTests":true}`)
	got := readFile(t, filepath.Join(sc.WorkDir, "out/all.yaml"))
	for _, s := range []string{"name: app\n", "namespace: demo\n", "replicas: 3\n", "image: nginx:1.27.0", "name: example-0.1.0"} {
		if !strings.Contains(got, s) {
			t.Errorf("no %q in\n%s", s, got)
		}
	}
	if strings.Contains(got, "helm.sh/hook: test") {
		t.Error("skipTests kept the test hook")
	}
	mustSucceed(t, helmTemplateRunner{creds: fixedCreds{}}, sc, `{"path":"testchart","outPath":"out/dir","releaseName":"app","namespace":"prod"}`)
	if d := readFile(t, filepath.Join(sc.WorkDir, "out/dir/testchart/templates/deploy.yaml")); !strings.Contains(d, "namespace: prod") {
		t.Errorf("per-template file:\n%s", d)
	}
	if d := readFile(t, filepath.Join(sc.WorkDir, "out/dir/testchart/charts/examplechart/templates/configmap.yaml")); d != "---\n# Source: testchart/charts/examplechart/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: example-0.1.0\n" {
		t.Errorf("the subchart's file, as Helm writes it:\n%q", d)
	}
	if h := readFile(t, filepath.Join(sc.WorkDir, "out/dir/testchart/templates/tests/t.yaml")); !strings.Contains(h, "helm.sh/hook: test") {
		t.Errorf("hook file:\n%s", h)
	}
}

func TestHelmErrors(t *testing.T) {
	sc := newStepContext(t, "")
	writeFiles(t, sc.WorkDir, map[string]string{
		"c/Chart.yaml":       "apiVersion: v2\nname: c\nversion: 0.1.0\ndependencies:\n- name: d\n  version: 1.0.0\n  repository: https://charts.example.com\n",
		"c/templates/x.yaml": "kind: X\n",
	})
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"passwd": "root:x:0:0"})
	writeFiles(t, sc.WorkDir, map[string]string{"l/Chart.yaml": "apiVersion: v2\nname: l\nversion: 0.1.0\n", "l/templates/x.yaml": "data: {{ .Files.Get \"leak\" | quote }}\n"})
	_ = os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(sc.WorkDir, "l/leak"))
	for cfg, want := range map[string]string{
		`{"path":"c","outPath":"o.yaml","releaseName":"r"}`:                             `missing chart dependencies: found in Chart.yaml, but missing in charts/ directory: d`,
		`{"path":"c","outPath":"o.yaml"}`:                                               "invalid helm-template config: (root): releaseName is required",
		`{"path":"l","outPath":"o.yaml","releaseName":"r"}`:                             "points outside the work directory",
		`{"path":"c","outPath":"o.yaml","releaseName":"r","valuesFiles":["../v.yaml"]}`: `failed to compose values: failed to join path "../v.yaml"`,
	} {
		if _, err := run(t, helmTemplateRunner{creds: fixedCreds{}}, sc, cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
	if _, err := run(t, helmChartUpdater{creds: fixedCreds{}}, sc, `{"path":"c","charts":[{"repository":"https://other","name":"d","version":"2"}]}`); err == nil ||
		err.Error() != `process dependency updates: no dependency in Chart.yaml matches update with repository "https://other" and name "d"` {
		t.Errorf("no such dependency: %v", err)
	}
}
