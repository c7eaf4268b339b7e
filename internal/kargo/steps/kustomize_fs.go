package steps

import (
	"fmt"
	"path/filepath"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// confinedFS is the disk as kustomize sees it in kustomize-build: only
// the working directory (Kargo uses fluxcd's "chrooted" file system for
// the same end). Every path is resolved, links included, and one outside
// the root is an error, so a Kustomization can load bases from anywhere in
// the working directory (LoadRestrictionsNone, as in Kargo) and from
// nowhere else.
type confinedFS struct {
	root string
	disk filesys.FileSystem
}

func newConfinedFS(root string) *confinedFS {
	return &confinedFS{root: root, disk: filesys.MakeFsOnDisk()}
}

// confine is p resolved, if it is in the root.
func (c *confinedFS) confine(p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.root, p)
	}
	r, err := resolve(filepath.Clean(p))
	if err != nil {
		return "", err
	}
	if !within(c.root, r) {
		return "", fmt.Errorf("%s is outside the Promotion's working directory", p)
	}
	return r, nil
}

func (c *confinedFS) Create(p string) (filesys.File, error) {
	r, err := c.confine(p)
	if err != nil {
		return nil, err
	}
	return c.disk.Create(r)
}

func (c *confinedFS) Mkdir(p string) error {
	r, err := c.confine(p)
	if err != nil {
		return err
	}
	return c.disk.Mkdir(r)
}

func (c *confinedFS) MkdirAll(p string) error {
	r, err := c.confine(p)
	if err != nil {
		return err
	}
	return c.disk.MkdirAll(r)
}

func (c *confinedFS) RemoveAll(p string) error {
	r, err := c.confine(p)
	if err != nil {
		return err
	}
	return c.disk.RemoveAll(r)
}

func (c *confinedFS) Open(p string) (filesys.File, error) {
	r, err := c.confine(p)
	if err != nil {
		return nil, err
	}
	return c.disk.Open(r)
}

func (c *confinedFS) IsDir(p string) bool {
	r, err := c.confine(p)
	return err == nil && c.disk.IsDir(r)
}

func (c *confinedFS) ReadDir(p string) ([]string, error) {
	r, err := c.confine(p)
	if err != nil {
		return nil, err
	}
	return c.disk.ReadDir(r)
}

func (c *confinedFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	r, err := c.confine(p)
	if err != nil {
		return "", "", err
	}
	d, f, err := c.disk.CleanedAbs(r)
	if err != nil {
		return "", "", err
	}
	if !within(c.root, string(d)) {
		return "", "", fmt.Errorf("%s is outside the Promotion's working directory", p)
	}
	return d, f, nil
}

func (c *confinedFS) Exists(p string) bool {
	r, err := c.confine(p)
	return err == nil && c.disk.Exists(r)
}

func (c *confinedFS) Glob(pattern string) ([]string, error) {
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(c.root, pattern)
	}
	if _, err := c.confine(filepath.Dir(pattern)); err != nil {
		return nil, err
	}
	all, err := c.disk.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range all {
		if _, err := c.confine(m); err == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

func (c *confinedFS) ReadFile(p string) ([]byte, error) {
	r, err := c.confine(p)
	if err != nil {
		return nil, err
	}
	return c.disk.ReadFile(r)
}

func (c *confinedFS) WriteFile(p string, data []byte) error {
	r, err := c.confine(p)
	if err != nil {
		return err
	}
	return c.disk.WriteFile(r, data)
}

func (c *confinedFS) Walk(p string, fn filepath.WalkFunc) error {
	r, err := c.confine(p)
	if err != nil {
		return err
	}
	return c.disk.Walk(r, fn)
}
