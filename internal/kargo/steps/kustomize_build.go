package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
)

// kustomizeBuilder is kustomize-build (Kargo's kustomize_builder.go): the
// Kustomization in path built with sigs.k8s.io/kustomize/api, written to
// outPath: one file when it ends in .yaml or .yml, else a directory with
// a file per resource ([<namespace>-]<kind>-<name>.yaml). No output.
//
// Kustomize sees only the working directory (confinedFS). Its plugins are
// off, as in Kargo; unlike Kargo its helmCharts inflation is too (it runs
// the helm command, and writes outside the working directory): render
// charts with helm-template. Remote bases and resources (URLs, git
// repositories) are refused before kustomize runs (kustomize_local.go).
type kustomizeBuilder struct{}

// kustomizeMu: one build at a time (kustomize's map race,
// kubernetes-sigs/kustomize#3659, as Kargo guards it).
var kustomizeMu sync.Mutex

type kustomizeBuildConfig struct {
	Path    string `json:"path"`
	OutPath string `json:"outPath"`
	Plugin  *struct {
		Helm *struct {
			APIVersions []string `json:"apiVersions,omitempty"`
			KubeVersion string   `json:"kubeVersion,omitempty"`
		} `json:"helm,omitempty"`
	} `json:"plugin,omitempty"`
}

func (kustomizeBuilder) Name() string { return "kustomize-build" }

func (k kustomizeBuilder) Run(_ context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[kustomizeBuildConfig]("kustomize-build", sc.Config)
	if err != nil {
		return errored(err)
	}
	dir, err := Join(sc.WorkDir, cfg.Path)
	if err != nil {
		return errored(err)
	}
	fs := newConfinedFS(sc.WorkDir)
	if err := checkLocal(fs, dir, map[string]bool{}); err != nil {
		return errored(err)
	}
	rm, err := kustomizeBuild(fs, dir)
	if err != nil {
		return errored(sanitizePath(err, sc.WorkDir))
	}
	out, err := Join(sc.WorkDir, cfg.OutPath)
	if err != nil {
		return errored(err)
	}
	w, err := openWorkFS(sc.WorkDir)
	if err != nil {
		return errored(err)
	}
	defer w.Close()
	if err := writeResources(w, rm, out); err != nil {
		return errored(fmt.Errorf("failed to write built manifests to %q: %w", cfg.OutPath, sanitizePath(err, sc.WorkDir)))
	}
	return succeeded(nil)
}

func kustomizeBuild(fs *confinedFS, path string) (_ resmap.ResMap, err error) {
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered from kustomize build panic: %v", r)
		}
	}()
	opts := &krusty.Options{
		LoadRestrictions: kustypes.LoadRestrictionsNone, // the file system is the working directory
		PluginConfig:     kustypes.DisabledPluginConfig(),
	}
	return krusty.MakeKustomizer(opts).Run(fs, path)
}

// writeResources writes the manifests to the file out, or to a file per
// resource in the directory out, named by its kind and name, which may
// hold a "/" or a "..": through w, such a name cannot leave the working
// directory.
func writeResources(w *workFS, rm resmap.ResMap, out string) error {
	if ext := filepath.Ext(out); ext == ".yaml" || ext == ".yml" {
		if err := w.MkdirAll(filepath.Dir(out), 0o700); err != nil {
			return err
		}
		b, err := rm.AsYaml()
		if err != nil {
			return err
		}
		return w.WriteFile(out, b, 0o600)
	}
	if err := w.MkdirAll(out, 0o700); err != nil {
		return err
	}
	for _, r := range rm.Resources() {
		kind, ns, name := r.GetKind(), r.GetNamespace(), r.GetName()
		if kind == "" || name == "" {
			return fmt.Errorf("resource kind and name of %q must be non-empty to write to a directory", r.CurId())
		}
		file := kind + "-" + name
		if ns != "" {
			file = ns + "-" + file
		}
		b, err := r.AsYAML()
		if err != nil {
			return fmt.Errorf("failed to convert %q to YAML: %w", r.CurId(), err)
		}
		if err := w.WriteFile(filepath.Join(out, strings.ToLower(file)+".yaml"), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// sanitizePath takes the working directory's absolute path out of an
// error (Kargo's fs.SanitizePathError): paths are shown relative to it.
func sanitizePath(err error, workDir string) error {
	if err == nil {
		return nil
	}
	msg := strings.ReplaceAll(err.Error(), workDir+string(filepath.Separator), "")
	msg = strings.ReplaceAll(msg, workDir, ".")
	if msg == err.Error() {
		return err
	}
	return sanitized{msg: msg, err: err}
}

type sanitized struct {
	msg string
	err error
}

func (s sanitized) Error() string { return s.msg }
func (s sanitized) Unwrap() error { return s.err }
