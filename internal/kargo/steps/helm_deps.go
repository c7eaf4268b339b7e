package steps

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	orascreds "oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"
	"sigs.k8s.io/yaml"

	"taskactions/internal/kargo/credentials"
)

// helmDeps is Kargo's EphemeralDependencyManager (internal/helm): chart
// dependencies updated or built with Helm's downloader, in a Helm home of
// its own (repositories, caches, registry logins) removed after, with the
// credentials of each repository from the credentials database.
type helmDeps struct {
	creds   credentials.Database
	project string
	workDir string
	home    string
	auth    *ociAuthorizer
}

// newHelmDeps makes the Helm home in base (it holds the repositories'
// credentials: outside the working directory).
func newHelmDeps(creds credentials.Database, project, workDir, base string) (*helmDeps, error) {
	home, err := os.MkdirTemp(base, "helm-home-*")
	if err != nil {
		return nil, err
	}
	return &helmDeps{creds: creds, project: project, workDir: workDir, home: home, auth: newOCIAuthorizer()}, nil
}

func (h *helmDeps) teardown() { _ = os.RemoveAll(h.home) }

func (h *helmDeps) repositoryConfig() string { return filepath.Join(h.home, "repositories.yaml") }
func (h *helmDeps) repositoryCache() string  { return filepath.Join(h.home, "cache") }

// chartDependency is a dependency of Chart.yaml or Chart.lock.
type chartDependency struct {
	Repository string `json:"repository,omitempty"`
	Name       string `json:"name,omitempty"`
	Version    string `json:"version,omitempty"`
}

func chartDependencies(p string) ([]chartDependency, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read file %q: %w", p, err)
	}
	var meta struct {
		Dependencies []chartDependency `json:"dependencies,omitempty"`
	}
	if err := yaml.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("unmarshal %q: %w", p, err)
	}
	return meta.Dependencies, nil
}

// update sets the versions of updates in Chart.yaml and updates the
// dependencies (Chart.lock, charts/); it returns the changes by name:
// "old -> new", a new version, or "" for one removed.
func (h *helmDeps) update(ctx context.Context, chartPath string, updates []chartDependency) (map[string]string, error) {
	abs, err := Join(h.workDir, chartPath)
	if err != nil {
		return nil, err
	}
	chartFile := filepath.Join(abs, "Chart.yaml")
	deps, err := chartDependencies(chartFile)
	if err != nil {
		return nil, fmt.Errorf("get chart dependencies: %w", err)
	}
	if err := h.validate(abs, deps); err != nil {
		return nil, fmt.Errorf("validate dependencies: %w", err)
	}
	if err := processUpdates(chartFile, deps, updates); err != nil {
		return nil, fmt.Errorf("process dependency updates: %w", err)
	}
	if err := h.setupRepositories(ctx, deps); err != nil {
		return nil, fmt.Errorf("setup repositories: %w", err)
	}
	return h.runUpdate(abs)
}

// build builds the dependencies as Chart.lock has them (making it when
// there is none).
func (h *helmDeps) build(ctx context.Context, chartPath string) error {
	abs, err := Join(h.workDir, chartPath)
	if err != nil {
		return err
	}
	deps, err := chartDependencies(filepath.Join(abs, "Chart.yaml"))
	if err != nil {
		return fmt.Errorf("get chart dependencies: %w", err)
	}
	if len(deps) == 0 {
		return nil
	}
	if err := h.validate(abs, deps); err != nil {
		return fmt.Errorf("validate dependencies: %w", err)
	}
	if err := h.setupRepositories(ctx, deps); err != nil {
		return fmt.Errorf("setup repositories: %w", err)
	}
	if err := h.fetchIndexes(); err != nil {
		return fmt.Errorf("fetch repository indexes: %w", err)
	}
	m, err := h.manager(abs)
	if err != nil {
		return err
	}
	if err := m.Build(); err != nil {
		return fmt.Errorf("build chart dependencies: %w", err)
	}
	return nil
}

func (h *helmDeps) manager(chartPath string) (*downloader.Manager, error) {
	rc, err := registry.NewClient(registry.ClientOptWriter(io.Discard), registry.ClientOptAuthorizer(h.auth.Client))
	if err != nil {
		return nil, fmt.Errorf("create registry client: %w", err)
	}
	env := &cli.EnvSettings{RepositoryConfig: h.repositoryConfig(), RepositoryCache: h.repositoryCache()}
	return &downloader.Manager{
		Out: io.Discard, ChartPath: chartPath, Verify: downloader.VerifyNever,
		SkipUpdate: true, // the indexes were fetched into this home
		Getters:    getter.All(env), RegistryClient: rc,
		RepositoryConfig: h.repositoryConfig(), RepositoryCache: h.repositoryCache(),
	}, nil
}

func (h *helmDeps) runUpdate(chartPath string) (_ map[string]string, err error) {
	if err := h.fetchIndexes(); err != nil {
		return nil, fmt.Errorf("fetch repository indexes: %w", err)
	}
	lockFile := filepath.Join(chartPath, "Chart.lock")
	before, err := chartDependencies(lockFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read initial dependencies from Chart.lock: %w", err)
	}
	backup, err := backupFile(lockFile)
	if err != nil {
		return nil, fmt.Errorf("create backup of Chart.lock: %w", err)
	}
	defer backup.remove()
	m, err := h.manager(chartPath)
	if err != nil {
		return nil, err
	}
	if err := m.Update(); err != nil {
		return nil, fmt.Errorf("update chart dependencies: %w", err)
	}
	after, err := chartDependencies(lockFile)
	if err != nil {
		return nil, fmt.Errorf("read updated dependencies from Chart.lock: %w", err)
	}
	changes := compareVersions(before, after)
	if len(changes) == 0 {
		// Helm rewrote the lock's timestamp only: keep the file as it was.
		if err := backup.restore(); err != nil {
			return nil, fmt.Errorf("restore original Chart.lock: %w", err)
		}
	}
	return changes, nil
}

// validate refuses a file:// dependency outside the working directory.
func (h *helmDeps) validate(chartPath string, deps []chartDependency) error {
	for _, d := range deps {
		if !strings.HasPrefix(d.Repository, "file://") {
			continue
		}
		p := filepath.FromSlash(strings.TrimPrefix(d.Repository, "file://"))
		if filepath.IsAbs(p) {
			return fmt.Errorf("invalid dependency %q: dependency path %q must be relative", d.Repository, p)
		}
		resolved, err := filepath.EvalSymlinks(filepath.Join(chartPath, p))
		if err != nil {
			return fmt.Errorf("invalid dependency %q: resolve dependency path: %w", d.Repository, err)
		}
		if !within(h.workDir, resolved) {
			return fmt.Errorf("invalid dependency %q: dependency path is outside the work directory", d.Repository)
		}
		if err := linksStayIn(h.workDir, resolved); err != nil {
			return fmt.Errorf("invalid dependency %q: %w", d.Repository, err)
		}
	}
	return nil
}

// linksStayIn refuses a symbolic link under dir that leads out of root
// (Helm follows links when it packages a chart).
func linksStayIn(root, dir string) error {
	return filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return err
		}
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("resolve symlink %q: %w", p, err)
		}
		if !within(root, target) {
			return fmt.Errorf("symlink %q points outside the work directory", p)
		}
		return nil
	})
}

// processUpdates writes the new versions into Chart.yaml.
func processUpdates(chartFile string, deps, updates []chartDependency) error {
	var changes []yamlUpdate
	for _, u := range updates {
		found := false
		for i, d := range deps {
			if d.Name == u.Name && d.Repository == u.Repository {
				found = true
				if d.Version != u.Version {
					changes = append(changes, yamlUpdate{Key: fmt.Sprintf("dependencies.%d.version", i), Value: u.Version})
				}
				break
			}
		}
		if !found {
			return fmt.Errorf("no dependency in Chart.yaml matches update with repository %q and name %q", u.Repository, u.Name)
		}
	}
	if len(changes) == 0 {
		return nil
	}
	if err := setValuesInFile(chartFile, changes); err != nil {
		return fmt.Errorf("update Chart.yaml with dependency changes: %w", err)
	}
	return nil
}

// setupRepositories writes the HTTP(S) repositories into the home's
// repositories.yaml, with their credentials, and logs in to OCI
// registries that have some.
func (h *helmDeps) setupRepositories(ctx context.Context, deps []chartDependency) error {
	file := repo.NewFile()
	hosts := map[string]bool{}
	for _, d := range deps {
		switch {
		case d.Repository == "", strings.HasPrefix(d.Repository, "file://"):
		case strings.HasPrefix(d.Repository, "http://"), strings.HasPrefix(d.Repository, "https://"):
			e := &repo.Entry{Name: repositoryName(d.Repository), URL: d.Repository}
			c, err := h.creds.Get(ctx, h.project, credentials.TypeHelm, d.Repository)
			if err != nil {
				return fmt.Errorf("obtain credentials for repository %q: %w", d.Repository, err)
			}
			if c != nil {
				e.Username, e.Password = c.Username, c.Password
			}
			file.Update(e)
		case strings.HasPrefix(d.Repository, "oci://"):
			repository := credentials.NormalizeChartRepositoryURL(d.Repository)
			host := repositoryHost(repository)
			if hosts[host] {
				continue
			}
			c, err := h.creds.Get(ctx, h.project, credentials.TypeHelm, "oci://"+path.Join(repository, d.Name))
			if err != nil {
				return fmt.Errorf("obtain credentials for repository %q: %w", d.Repository, err)
			}
			if c != nil {
				if err := h.auth.login(ctx, host, c.Username, c.Password); err != nil {
					return fmt.Errorf("authenticate with chart repository %q: %w", d.Repository, err)
				}
				hosts[host] = true
			}
		}
	}
	if err := file.WriteFile(h.repositoryConfig(), 0o600); err != nil {
		return fmt.Errorf("write repository config file: %w", err)
	}
	return nil
}

// fetchIndexes downloads the repositories' indexes into the home's cache.
func (h *helmDeps) fetchIndexes() error {
	file, err := repo.LoadFile(h.repositoryConfig())
	if err != nil {
		return fmt.Errorf("load repository config file: %w", err)
	}
	env := &cli.EnvSettings{RepositoryConfig: h.repositoryConfig(), RepositoryCache: h.repositoryCache()}
	for _, e := range file.Repositories {
		cr, err := repo.NewChartRepository(e, getter.All(env))
		if err != nil {
			return fmt.Errorf("create chart repository for %q: %w", e.URL, err)
		}
		cr.CachePath = env.RepositoryCache
		if _, err := cr.DownloadIndexFile(); err != nil {
			return fmt.Errorf("download repository index for %q: %w", e.URL, err)
		}
	}
	return nil
}

// compareVersions is Kargo's compareChartVersions.
func compareVersions(before, after []chartDependency) map[string]string {
	prev := map[string]string{}
	for _, d := range before {
		prev[d.Name] = d.Version
	}
	changes := map[string]string{}
	for _, d := range after {
		if old, ok := prev[d.Name]; ok {
			if old != d.Version {
				changes[d.Name] = old + " -> " + d.Version
			}
			delete(prev, d.Name)
		} else {
			changes[d.Name] = d.Version
		}
	}
	for name := range prev {
		changes[name] = ""
	}
	return changes
}

// repositoryName is the SHA-256 of the URL normalized as Helm compares
// repository URLs (urlutil.Equal).
func repositoryName(repoURL string) string {
	if u, err := url.Parse(repoURL); err == nil {
		if u.Path == "" {
			u.Path = "/"
		}
		u.Path = filepath.Clean(u.Path)
		repoURL = u.String()
	} else {
		repoURL = filepath.Clean(repoURL)
	}
	return fmt.Sprintf("%x", sha256.Sum256([]byte(repoURL)))
}

// repositoryHost is the host of a repository URL.
func repositoryHost(repoURL string) string {
	for _, s := range []string{"oci://", "http://", "https://"} {
		if strings.HasPrefix(repoURL, s) {
			repoURL = strings.TrimPrefix(repoURL, s)
			break
		}
	}
	host, _, _ := strings.Cut(repoURL, "/")
	return host
}

// fileBackup is a copy of a file to restore.
type fileBackup struct{ orig, backup string }

func backupFile(p string) (*fileBackup, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return &fileBackup{orig: p}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("failed to stat %q: %w", p, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("cannot create backup of symlink %q", p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	backup := fmt.Sprintf("%s.%s.bak", p, time.Now().Format("20060102150405"))
	if err := os.WriteFile(backup, b, fi.Mode().Perm()); err != nil {
		return nil, fmt.Errorf("failed to copy %q to %q: %w", p, backup, err)
	}
	return &fileBackup{orig: p, backup: backup}, nil
}

func (b *fileBackup) restore() error {
	if b.backup == "" {
		return nil
	}
	if err := os.Rename(b.backup, b.orig); err != nil {
		return fmt.Errorf("failed to restore backup file %q to %q: %w", b.backup, b.orig, err)
	}
	b.backup = ""
	return nil
}

func (b *fileBackup) remove() {
	if b.backup != "" {
		_ = os.Remove(b.backup)
	}
}

// ociAuthorizer is Kargo's EphemeralAuthorizer: an OCI client with
// in-memory logins, retrying, falling back to plain HTTP for a registry
// that answers HTTPS with HTTP (a local registry).
type ociAuthorizer struct {
	auth.Client
	store orascreds.Store
}

func newOCIAuthorizer() *ociAuthorizer {
	store := orascreds.NewMemoryStore()
	base := http.DefaultTransport.(*http.Transport).Clone()
	a := &ociAuthorizer{store: store}
	a.Client = auth.Client{
		Client:     &http.Client{Transport: retry.NewTransport(&httpFallback{base: base})},
		Cache:      auth.NewCache(),
		Credential: orascreds.Credential(store),
	}
	a.SetUserAgent("Kargo")
	return a
}

func (a *ociAuthorizer) login(ctx context.Context, host, username, password string) error {
	reg, err := remote.NewRegistry(host)
	if err != nil {
		return err
	}
	reg.Client = &a.Client
	return orascreds.Login(ctx, a.store, reg, auth.Credential{Username: username, Password: password})
}

// httpFallback retries over HTTP a request that an HTTPS registry
// answered with HTTP, and remembers the host.
type httpFallback struct {
	base      http.RoundTripper
	httpHosts sync.Map
}

func (t *httpFallback) RoundTrip(req *http.Request) (*http.Response, error) {
	if v, ok := t.httpHosts.Load(req.URL.Host); ok && v.(bool) {
		req.URL.Scheme = "http"
		return t.base.RoundTrip(req)
	}
	resp, err := t.base.RoundTrip(req)
	var tlsErr tls.RecordHeaderError
	if err != nil && req.URL.Scheme == "https" && errors.As(err, &tlsErr) && string(tlsErr.RecordHeader[:]) == "HTTP/" {
		t.httpHosts.Store(req.URL.Host, true)
		req.URL.Scheme = "http"
		return t.base.RoundTrip(req)
	}
	return resp, err
}
