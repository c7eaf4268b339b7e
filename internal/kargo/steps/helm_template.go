package steps

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/release"

	"taskactions/internal/kargo/credentials"
)

// helmTemplateRunner is helm-template (Kargo's helm_template_runner.go):
// the chart at path rendered as `helm template` does (Helm's install
// action, dry-run and client-only), with its values files and setValues,
// to outPath: one file when it ends in .yaml or .yml, else Helm's
// per-template files under that directory. With buildDependencies its
// dependencies are built first. No output.
type helmTemplateRunner struct{ creds credentials.Database }

type helmTemplateConfig struct {
	Path              string   `json:"path"`
	OutPath           string   `json:"outPath"`
	ReleaseName       string   `json:"releaseName"`
	UseReleaseName    bool     `json:"useReleaseName,omitempty"`
	Namespace         string   `json:"namespace,omitempty"`
	ValuesFiles       []string `json:"valuesFiles,omitempty"`
	BuildDependencies bool     `json:"buildDependencies,omitempty"`
	IncludeCRDs       bool     `json:"includeCRDs,omitempty"`
	DisableHooks      bool     `json:"disableHooks,omitempty"`
	SkipTests         bool     `json:"skipTests,omitempty"`
	KubeVersion       string   `json:"kubeVersion,omitempty"`
	APIVersions       []string `json:"apiVersions,omitempty"`
	SetValues         []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	} `json:"setValues,omitempty"`
}

func (cfg helmTemplateConfig) outIsFile() bool {
	ext := filepath.Ext(cfg.OutPath)
	return ext == ".yaml" || ext == ".yml"
}

func (helmTemplateRunner) Name() string { return "helm-template" }

func (h helmTemplateRunner) Run(ctx context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[helmTemplateConfig](h.Name(), sc.Config)
	if err != nil {
		return errored(err)
	}
	vals, err := composeValues(sc.WorkDir, cfg)
	if err != nil {
		return errored(fmt.Errorf("failed to compose values: %w", err))
	}
	if cfg.BuildDependencies {
		deps, err := newHelmDeps(h.creds, sc.Project, sc.WorkDir, sc.GitHome)
		if err == nil {
			err = deps.build(ctx, cfg.Path)
			deps.teardown()
		}
		if err != nil {
			return errored(fmt.Errorf("failed to build chart dependencies: %w", err))
		}
	}
	chartDir, err := Join(sc.WorkDir, cfg.Path)
	if err != nil {
		return errored(fmt.Errorf("failed to load chart from %q: %w", cfg.Path, err))
	}
	// Helm's loader follows links: one out of the working directory would
	// let .Files read the server's files into the manifests.
	if err := linksStayIn(sc.WorkDir, chartDir); err != nil {
		return errored(fmt.Errorf("failed to load chart from %q: %w", cfg.Path, sanitizePath(err, sc.WorkDir)))
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		return errored(fmt.Errorf("failed to load chart from %q: %w", cfg.Path, sanitizePath(err, sc.WorkDir)))
	}
	out, err := Join(sc.WorkDir, cfg.OutPath)
	if err != nil {
		return errored(fmt.Errorf("failed to join path %q: %w", cfg.OutPath, err))
	}
	if req := ch.Metadata.Dependencies; req != nil {
		if err := action.CheckDependencies(ch, req); err != nil {
			return errored(fmt.Errorf("missing chart dependencies: %w", err))
		}
	}
	install, err := newInstall(cfg, sc.Project, out)
	if err != nil {
		return errored(fmt.Errorf("failed to initialize Helm action config: %w", err))
	}
	rls, err := install.RunWithContext(ctx, ch, vals)
	if err != nil {
		return errored(fmt.Errorf("failed to render chart: %w", err))
	}
	w, err := openWorkFS(sc.WorkDir)
	if err != nil {
		return errored(err)
	}
	defer w.Close()
	if err := writeRelease(w, cfg, rls, out); err != nil {
		return errored(fmt.Errorf("failed to write rendered chart: %w", err))
	}
	return succeeded(nil)
}

// composeValues merges the values files in order, then setValues.
func composeValues(workDir string, cfg helmTemplateConfig) (map[string]any, error) {
	opts := &values.Options{}
	for _, p := range cfg.ValuesFiles {
		abs, err := Join(workDir, p)
		if err != nil {
			return nil, fmt.Errorf("failed to join path %q: %w", p, err)
		}
		opts.ValueFiles = append(opts.ValueFiles, abs)
	}
	for _, sv := range cfg.SetValues {
		opts.Values = append(opts.Values, sv.Key+"="+sv.Value)
	}
	return opts.MergeValues(nil)
}

// newInstall is `helm template`'s install action: a client-only dry run.
func newInstall(cfg helmTemplateConfig, project, out string) (*action.Install, error) {
	c := action.NewInstall(&action.Configuration{})
	c.DryRun, c.DryRunOption, c.Replace, c.ClientOnly = true, "client", true, true
	c.ReleaseName = cfg.ReleaseName
	if c.ReleaseName == "" {
		c.ReleaseName = "release-name"
	}
	c.UseReleaseName = cfg.UseReleaseName
	c.Namespace = cfg.Namespace
	if c.Namespace == "" {
		c.Namespace = project
	}
	c.IncludeCRDs, c.APIVersions, c.DisableHooks = cfg.IncludeCRDs, cfg.APIVersions, cfg.DisableHooks
	// No OutputDir: with one Helm writes the files itself and prints
	// "wrote <file>" on the server's standard output, among its logs;
	// writeRelease writes them as it would.
	if cfg.KubeVersion != "" {
		kv, err := chartutil.ParseKubeVersion(cfg.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("failed to parse Kubernetes version %q: %w", cfg.KubeVersion, err)
		}
		c.KubeVersion = kv
	}
	return c, nil
}

// writeRelease writes the manifests (and hooks) as `helm template` does,
// through w: a template's or a hook's path, which the chart names, cannot
// leave the working directory.
func writeRelease(w *workFS, cfg helmTemplateConfig, rls *release.Release, out string) error {
	var manifests bytes.Buffer
	file := cfg.outIsFile()
	if file {
		fmt.Fprintln(&manifests, strings.TrimSpace(rls.Manifest))
	}
	if !file {
		if err := writeManifests(w, cfg, rls.Manifest, out); err != nil {
			return err
		}
	}
	if !cfg.DisableHooks {
		for _, hk := range rls.Hooks {
			if cfg.SkipTests && slices.Contains(hk.Events, release.HookTest) {
				continue
			}
			if file {
				fmt.Fprintf(&manifests, "---\n# Source: %s\n%s\n", hk.Path, hk.Manifest)
				continue
			}
			dir := out
			if cfg.UseReleaseName {
				dir = filepath.Join(dir, cfg.ReleaseName)
			}
			_, statErr := w.Lstat(filepath.Join(dir, hk.Path))
			if statErr != nil && !os.IsNotExist(statErr) {
				return fmt.Errorf("failed to check if file %q exists: %w", hk.Path, statErr)
			}
			if err := writeHelmFile(w, out, hk.Path, hk.Manifest, statErr == nil); err != nil {
				return fmt.Errorf("failed to write hook %q: %w", hk.Path, err)
			}
		}
	}
	if !file {
		return nil
	}
	if err := w.MkdirAll(filepath.Dir(out), 0o700); err != nil {
		return fmt.Errorf("failed to create directory %q: %w", cfg.OutPath, err)
	}
	return w.WriteFile(out, manifests.Bytes(), 0o600)
}

// writeManifests writes each template's documents to its own file under
// out (out/<releaseName> with useReleaseName), as Helm's install action
// does with an output directory: the manifest is Helm's
// "---\n# Source: <file>\n<document>\n" blocks, several documents of a
// file appended to it.
func writeManifests(w *workFS, cfg helmTemplateConfig, manifest, out string) error {
	dir := out
	if cfg.UseReleaseName {
		dir = filepath.Join(out, cfg.ReleaseName)
	}
	written := map[string]bool{}
	for _, block := range strings.Split(manifest, "---\n# Source: ") {
		name, doc, ok := strings.Cut(block, "\n")
		if !ok || name == "" {
			continue
		}
		if err := checkRelative(name); err != nil {
			return err
		}
		if err := writeHelmFile(w, dir, name, strings.TrimSuffix(doc, "\n"), written[name]); err != nil {
			return fmt.Errorf("failed to write %q: %w", name, err)
		}
		written[name] = true
	}
	return nil
}

// writeHelmFile is Helm's (cmd/helm/template.go): a document appended, or
// a new file.
func writeHelmFile(w *workFS, dir, name, data string, appendTo bool) (err error) {
	p := filepath.Join(dir, name)
	if err := w.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	flags := os.O_CREATE | os.O_TRUNC | os.O_WRONLY
	if appendTo {
		flags = os.O_APPEND | os.O_WRONLY
	}
	f, err := w.OpenFile(p, flags, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	_, err = fmt.Fprintf(f, "---\n# Source: %s\n%s\n", name, data)
	return err
}
