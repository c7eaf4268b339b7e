package steps

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/yaml"
)

// checkLocal refuses, before kustomize runs, a Kustomization (the one in
// dir, or any it reaches) that names something outside the working
// directory: a URL, a git repository (github.com/org/repo//path) or a
// path that leads out. Kustomize would fetch those itself, with its own
// HTTP client and the git command, whatever the file system it is given
// (Kargo lets it): here a Stage's author could have the server read an
// internal service into the manifests it pushes.
func checkLocal(fs *confinedFS, dir string, seen map[string]bool) error {
	if seen[dir] {
		return nil
	}
	seen[dir] = true
	var file string
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() {
			file = filepath.Join(dir, name)
			break
		}
	}
	if file == "" {
		return nil // kustomize says what is missing
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var k map[string]any
	if err := yaml.Unmarshal(b, &k); err != nil {
		return nil // kustomize says what is wrong
	}
	for _, entry := range localEntries(k) {
		p := entry
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		r, err := fs.confine(p)
		fi, statErr := os.Stat(r)
		if err != nil || statErr != nil {
			return fmt.Errorf("%s: %q is not a file or directory of the Promotion's working directory (remote bases and resources are not loaded)",
				sanitizePath(fmt.Errorf("%s", file), fs.root), entry)
		}
		if fi.IsDir() {
			if err := checkLocal(fs, r, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// localEntries are the paths a Kustomization loads.
func localEntries(k map[string]any) []string {
	var out []string
	strs := func(v any) {
		l, _ := v.([]any)
		for _, e := range l {
			if s, ok := e.(string); ok && !strings.Contains(s, "\n") {
				out = append(out, s)
			}
		}
	}
	for _, key := range []string{"resources", "bases", "components", "crds", "configurations", "generators", "transformers", "validators", "patchesStrategicMerge"} {
		strs(k[key])
	}
	for _, key := range []string{"patches", "patchesJson6902"} {
		l, _ := k[key].([]any)
		for _, e := range l {
			if m, ok := e.(map[string]any); ok {
				if s, ok := m["path"].(string); ok {
					out = append(out, s)
				}
			}
		}
	}
	if o, ok := k["openapi"].(map[string]any); ok {
		if s, ok := o["path"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}
