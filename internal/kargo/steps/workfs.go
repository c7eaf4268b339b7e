package steps

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// workFS writes in the Promotion's working directory through an os.Root.
// Join checks the paths a step is configured with, but a step also writes
// to paths it builds: the files of a tree it copies, a resource's kind and
// name, a chart's template and hook paths. What such a path holds comes
// from the Stage's author or a repository they control, and so may a
// symbolic link in the directory. Through the root, a ".." or a link that
// leads out of the working directory fails instead of writing there.
type workFS struct {
	dir  string
	root *os.Root
}

// openWorkFS opens the working directory dir; the caller closes it.
func openWorkFS(dir string) (*workFS, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &workFS{dir: dir, root: root}, nil
}

func (w *workFS) Close() error { return w.root.Close() }

// rel is path, a path in the working directory (as Join returns), relative
// to it.
func (w *workFS) rel(path string) (string, error) {
	r, err := filepath.Rel(w.dir, path)
	if err != nil || !filepath.IsLocal(r) && r != "." {
		return "", fmt.Errorf("path %q: %w", path, ErrOutsideWorkDir)
	}
	return r, nil
}

func (w *workFS) MkdirAll(path string, perm os.FileMode) error {
	r, err := w.rel(path)
	if err != nil {
		return err
	}
	return w.root.MkdirAll(r, perm)
}

func (w *workFS) OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	r, err := w.rel(path)
	if err != nil {
		return nil, err
	}
	return w.root.OpenFile(r, flag, perm)
}

func (w *workFS) WriteFile(path string, data []byte, perm os.FileMode) error {
	r, err := w.rel(path)
	if err != nil {
		return err
	}
	return w.root.WriteFile(r, data, perm)
}

func (w *workFS) Lstat(path string) (fs.FileInfo, error) {
	r, err := w.rel(path)
	if err != nil {
		return nil, err
	}
	return w.root.Lstat(r)
}

func (w *workFS) Remove(path string) error {
	r, err := w.rel(path)
	if err != nil {
		return err
	}
	return w.root.Remove(r)
}

func (w *workFS) Chmod(path string, mode os.FileMode) error {
	r, err := w.rel(path)
	if err != nil {
		return err
	}
	return w.root.Chmod(r, mode)
}
