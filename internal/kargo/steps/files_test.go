package steps

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Kargo's yaml_updater_test.go "successful run with updates".
func TestYAMLUpdate(t *testing.T) {
	sc := newStepContext(t, "")
	writeFiles(t, sc.WorkDir, map[string]string{"values.yaml": "\nimage:\n  tag: oldtag # pinned\n  numStr: \"5\"\n  realNum: 5\n"})
	out := mustSucceed(t, yamlUpdater{}, sc, `{"path":"values.yaml","updates":[{"key":"image.tag","value":"fake-tag"},{"key":"image.numStr","value":"42"},{"key":"image.realNum","value":42}]}`)
	want := "Updated values.yaml\n\n- image.tag: fake-tag\n- image.numStr: \"42\"\n- image.realNum: 42"
	if out["commitMessage"] != want {
		t.Errorf("commitMessage %q, want %q", out["commitMessage"], want)
	}
	got := readFile(t, filepath.Join(sc.WorkDir, "values.yaml"))
	for _, l := range []string{"  tag: fake-tag\n", `  numStr: "42"` + "\n", "  realNum: 42\n"} {
		if !strings.Contains(got, l) {
			t.Errorf("no %q in\n%s", l, got)
		}
	}
	if _, err := run(t, yamlUpdater{}, sc, `{"path":"values.yaml","updates":[{"key":"image.nope","value":1}]}`); err == nil ||
		err.Error() != `values file update failed: error updating image references in values file "values.yaml": error mutating bytes: error finding key image.nope: key path not found` {
		t.Errorf("a missing key: %v", err)
	}
	if _, err := run(t, yamlUpdater{}, sc, `{"path":"values.yaml","updates":[]}`); err == nil ||
		err.Error() != "invalid yaml-update config: updates: Array must have at least 1 items" {
		t.Errorf("no updates: %v", err)
	}
}

// Kargo's json_updater_test.go case.
func TestJSONUpdate(t *testing.T) {
	sc := newStepContext(t, "")
	writeFiles(t, sc.WorkDir, map[string]string{"config.json": `{"app": {"version": "1.0.0"}, "features": {"newFeature": false}}`})
	out := mustSucceed(t, jsonUpdater{}, sc, `{"path":"config.json","updates":[{"key":"app.version","value":"1.0.1"},{"key":"features.newFeature","value":true},{"key":"threshold","value":100}]}`)
	want := "Updated config.json\n\n- app.version: \"1.0.1\"\n- features.newFeature: true\n- threshold: 100"
	if out["commitMessage"] != want {
		t.Errorf("commitMessage %q, want %q", out["commitMessage"], want)
	}
	got := readFile(t, filepath.Join(sc.WorkDir, "config.json"))
	for _, s := range []string{`"version": "1.0.1"`, `"newFeature": true`, `"threshold":100`} {
		if !strings.Contains(got, s) {
			t.Errorf("no %s in %s", s, got)
		}
	}
	if _, err := run(t, jsonUpdater{}, sc, `{"path":"config.json","updates":[{"key":"a","value":{"x":1}}]}`); err == nil ||
		err.Error() != `JSON file update failed: value for key "a" is not a scalar type` {
		t.Errorf("an object: %v", err)
	}
}

func TestCopyAndDelete(t *testing.T) {
	sc := newStepContext(t, "")
	writeFiles(t, sc.WorkDir, map[string]string{
		"src/a.yaml": "a", "src/sub/b.yaml": "b", "src/skip.tmp": "x", "src/.git/HEAD": "ref", "one.txt": "1",
	})
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret": "s"})
	_ = os.Symlink(filepath.Join(outside, "secret"), filepath.Join(sc.WorkDir, "src", "link"))
	mustSucceed(t, fileCopier{}, sc, `{"inPath":"src","outPath":"dst","ignore":"# comment\n*.tmp\n"}`)
	var got []string
	_ = filepath.Walk(filepath.Join(sc.WorkDir, "dst"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			r, _ := filepath.Rel(filepath.Join(sc.WorkDir, "dst"), p)
			got = append(got, r)
		}
		return nil
	})
	if want := []string{"a.yaml", "sub/b.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("copied %v, want %v (no .git, no ignored, no link)", got, want)
	}
	mustSucceed(t, fileCopier{}, sc, `{"inPath":"one.txt","outPath":"dst/copy.txt"}`)
	if readFile(t, filepath.Join(sc.WorkDir, "dst/copy.txt")) != "1" {
		t.Error("a file copy")
	}
	if _, err := run(t, fileCopier{}, sc, `{"inPath":"nope","outPath":"x"}`); err == nil || !strings.HasPrefix(err.Error(), `failed to copy "nope" to "x": lstat nope: no such file`) {
		t.Errorf("a missing inPath: %v", err)
	}

	// delete: a link goes, not what it points to; missing is fine unless strict.
	mustSucceed(t, fileDeleter{}, sc, `{"path":"src/link"}`)
	if _, err := os.Lstat(filepath.Join(sc.WorkDir, "src/link")); !os.IsNotExist(err) {
		t.Error("the link is still there")
	}
	if readFile(t, filepath.Join(outside, "secret")) != "s" {
		t.Error("the link's target went")
	}
	mustSucceed(t, fileDeleter{}, sc, `{"path":"dst"}`)
	mustSucceed(t, fileDeleter{}, sc, `{"path":"dst"}`)
	if _, err := run(t, fileDeleter{}, sc, `{"path":"dst","strict":true}`); err == nil || !strings.HasPrefix(err.Error(), `failed to delete "dst": lstat dst: no such file`) {
		t.Errorf("strict: %v", err)
	}
	for _, p := range []string{"..", ".", "/etc/passwd", "a/../../x"} {
		if _, err := run(t, fileDeleter{}, sc, `{"path":"`+p+`"}`); err == nil || !strings.Contains(err.Error(), "may not leave it") {
			t.Errorf("delete %q: %v", p, err)
		}
	}
}

func TestComposeOutput(t *testing.T) {
	sc := newStepContext(t, "")
	out := mustSucceed(t, outputComposer{}, sc, `{"prURL":"https://x/1","n":2}`)
	if !reflect.DeepEqual(out, map[string]any{"prURL": "https://x/1", "n": float64(2)}) {
		t.Errorf("output %v", out)
	}
	if _, err := run(t, outputComposer{}, sc, `{}`); err == nil || err.Error() != "invalid compose-output config: (root): Must have at least 1 properties" {
		t.Errorf("empty: %v", err)
	}
}

func TestJoin(t *testing.T) {
	root, _ := filepath.EvalSymlinks(t.TempDir())
	outside := t.TempDir()
	_ = os.Symlink(outside, filepath.Join(root, "out"))
	_ = os.Symlink("in", filepath.Join(root, "rel"))
	_ = os.Mkdir(filepath.Join(root, "in"), 0o755)
	_ = os.Symlink(filepath.Join(outside, "nope"), filepath.Join(root, "dangling"))
	for rel, want := range map[string]string{
		"a/b": filepath.Join(root, "a/b"), ".": root, "rel/x": filepath.Join(root, "in/x"), "./in": filepath.Join(root, "in"),
	} {
		if got, err := Join(root, rel); err != nil || got != want {
			t.Errorf("Join %q = %q %v, want %q", rel, got, err, want)
		}
	}
	for _, rel := range []string{"/etc", "../x", "a/../../x", "out/x", "out", "dangling", "dangling/x"} {
		if got, err := Join(root, rel); err == nil {
			t.Errorf("Join %q = %q, want refused", rel, got)
		}
	}
}
