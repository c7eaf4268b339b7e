package steps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Dirs is where Promotions work: <Root>/<project>/<run>/work is a
// Promotion's working directory (its steps' paths are relative to it), and
// <Root>/<project>/<run>/git the home directories of its clones (their
// credentials), out of the steps' reach.
type Dirs struct{ Root string }

func (d Dirs) promotion(project, run string) string { return filepath.Join(d.Root, project, run) }

// Work is a Promotion's working directory.
func (d Dirs) Work(project, run string) string {
	return filepath.Join(d.promotion(project, run), "work")
}

// Git is where a Promotion's clones keep their homes.
func (d Dirs) Git(project, run string) string {
	return filepath.Join(d.promotion(project, run), "git")
}

// Remove removes what a Promotion's steps left (the orchestrator calls it
// when the Promotion ends). It is idempotent.
func (d Dirs) Remove(project, run string) error {
	if d.Root == "" || project == "" || run == "" {
		return nil
	}
	if err := os.RemoveAll(d.promotion(project, run)); err != nil {
		return fmt.Errorf("remove the working directory of run %s: %w", run, err)
	}
	return nil
}

// Exists reports whether a Promotion's working directory is on this disk.
func (d Dirs) Exists(project, run string) (bool, error) {
	_, err := os.Stat(d.Work(project, run))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// Make makes a Promotion's working directory (the orchestrator does, before
// its first step; steps never do: a directory missing is a Promotion to
// start over). It is idempotent.
func (d Dirs) Make(project, run string) error {
	if err := os.MkdirAll(d.Work(project, run), 0o700); err != nil {
		return fmt.Errorf("make the working directory of run %s: %w", run, err)
	}
	return nil
}

// errNoWorkDir: the orchestrator has not made the Promotion's working
// directory on this disk (yet: it makes it before the first step, and
// starts the Promotion over when it is gone).
var errNoWorkDir = errors.New("the Promotion's working directory is not on this replica's disk")

// open returns a Promotion's directories, resolved: the working directory
// must exist (errNoWorkDir); the clones' homes are made when missing.
func (d Dirs) open(project, run string) (work, git string, err error) {
	work, git = d.Work(project, run), d.Git(project, run)
	if work, err = filepath.EvalSymlinks(work); errors.Is(err, fs.ErrNotExist) {
		return "", "", errNoWorkDir
	} else if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(git, 0o700); err != nil {
		return "", "", err
	}
	if git, err = filepath.EvalSymlinks(git); err != nil {
		return "", "", err
	}
	return work, git, nil
}

// ErrOutsideWorkDir is a path that is absolute, has a "..", or leads out
// of the working directory through a symbolic link.
var ErrOutsideWorkDir = errors.New("paths are relative to the Promotion's working directory and may not leave it")

// Join is the path rel in the working directory root, with its symbolic
// links resolved (the part that exists): an absolute rel, one with a ".."
// element, or one that a link leads out of root is refused (Kargo clamps
// such paths into the working directory with securejoin; here they are
// errors, so a typo is not silently another file).
func Join(root, rel string) (string, error) {
	if rel == "" || rel == "." {
		return root, nil
	}
	if err := checkRelative(rel); err != nil {
		return "", err
	}
	resolved, err := resolve(filepath.Join(root, rel))
	if err != nil {
		return "", err
	}
	if !within(root, resolved) {
		return "", fmt.Errorf("path %q leads out through a symbolic link: %w", rel, ErrOutsideWorkDir)
	}
	return resolved, nil
}

// checkRelative refuses an absolute path, or one with a ".." element.
func checkRelative(rel string) error {
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, `\`) {
		return fmt.Errorf("path %q is absolute: %w", rel, ErrOutsideWorkDir)
	}
	for _, el := range strings.Split(filepath.ToSlash(rel), "/") {
		if el == ".." {
			return fmt.Errorf("path %q has a \"..\": %w", rel, ErrOutsideWorkDir)
		}
	}
	return nil
}

// resolve resolves the symbolic links of the longest part of p that
// exists, and appends the rest.
func resolve(p string) (string, error) {
	rest := ""
	for cur := p; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			// It exists but does not resolve: a link to nowhere, which a
			// write would follow wherever it points.
			return "", fmt.Errorf("%q is a dangling symbolic link: %w", filepath.Base(cur), ErrOutsideWorkDir)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// within reports whether p is root or under it (both clean and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
