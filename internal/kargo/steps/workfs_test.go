package steps

import (
	"os"
	"path/filepath"
	"testing"
)

// The steps that write files they name themselves write nothing outside
// the working directory, whatever a repository or a Stage's author put
// there: a link to a directory outside, or a resource named with "..".
// Each case fails its step and leaves the outside directory empty, where
// the step wrote there before.
func TestStepsWriteOnlyInTheWorkDir(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		link  string // a link to the outside dir, at this path in the work dir
		up    string // a link to the outside dir, of this name, beside the work dir
		step  Runner
		cfg   string
	}{
		{
			name:  "copy into a linked directory",
			files: map[string]string{"repo/payload/evil/authorized_keys": "ssh-ed25519 AAAA attacker\n"},
			link:  "repo/target/evil",
			step:  fileCopier{},
			cfg:   `{"inPath":"repo/payload","outPath":"repo/target"}`,
		},
		{
			name: "kustomize-build of a resource named with ..",
			files: map[string]string{
				"src/kustomization.yaml": "resources:\n- cm.yaml\n",
				// Written to out/configmap-<name>.yaml: three ".." lead
				// from out/configmap-x to beside the work dir.
				"src/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x/../../../outside/planted\n",
			},
			up:   "outside",
			step: kustomizeBuilder{},
			cfg:  `{"path":"src","outPath":"out"}`,
		},
		{
			name: "helm-template into a linked directory",
			files: map[string]string{
				"chart/Chart.yaml":          "apiVersion: v2\nname: c\nversion: 0.1.0\n",
				"chart/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
				"chart/templates/hook.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: h\n  annotations:\n    helm.sh/hook: pre-install\n",
			},
			link: "out/c",
			step: helmTemplateRunner{},
			cfg:  `{"path":"chart","outPath":"out","releaseName":"r"}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := newStepContext(t, "")
			outside := t.TempDir()
			writeFiles(t, sc.WorkDir, tc.files)
			if tc.link != "" {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(sc.WorkDir, tc.link)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, filepath.Join(sc.WorkDir, tc.link)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.up != "" {
				if err := os.Symlink(outside, filepath.Join(filepath.Dir(sc.WorkDir), tc.up)); err != nil {
					t.Fatal(err)
				}
			}
			res, err := run(t, tc.step, sc, tc.cfg)
			var planted []string
			_ = filepath.WalkDir(outside, func(p string, d os.DirEntry, _ error) error {
				if p != outside {
					planted = append(planted, p)
				}
				return nil
			})
			if len(planted) > 0 {
				t.Fatalf("the step wrote outside the work dir: %v (status %s, %v)", planted, res.Status, err)
			}
			if err == nil {
				t.Errorf("the step succeeded (%s); want an error", res.Status)
			}
		})
	}
}
