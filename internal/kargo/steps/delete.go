package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// fileDeleter is delete (Kargo's file_deleter.go): a file or a directory
// (with its contents) removed; a symbolic link is removed itself, never
// what it points to. A path that does not exist is not an error unless
// strict. No output.
type fileDeleter struct{}

type deleteConfig struct {
	Path   string `json:"path"`
	Strict bool   `json:"strict,omitempty"`
}

func (fileDeleter) Name() string { return "delete" }

func (f fileDeleter) Run(_ context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[deleteConfig](f.Name(), sc.Config)
	if err != nil {
		return errored(err)
	}
	// A link named by the path itself is removed as a link: its parent is
	// resolved, not the link.
	clean := filepath.Clean(cfg.Path)
	if err := checkRelative(cfg.Path); err != nil || clean == "." {
		if err == nil {
			err = fmt.Errorf("path %q is the working directory itself: %w", cfg.Path, ErrOutsideWorkDir)
		}
		return errored(fmt.Errorf("could not secure join path %q: %w", cfg.Path, err))
	}
	parent, err := Join(sc.WorkDir, filepath.Dir(clean))
	if err != nil {
		return errored(fmt.Errorf("could not secure join path %q: %w", cfg.Path, err))
	}
	target := filepath.Join(parent, filepath.Base(clean))
	fi, err := os.Lstat(target)
	switch {
	case os.IsNotExist(err) && !cfg.Strict:
		return succeeded(nil)
	case err != nil:
		return errored(fmt.Errorf("failed to delete %q: %w", cfg.Path, sanitizePath(err, sc.WorkDir)))
	case fi.IsDir():
		err = os.RemoveAll(target)
	default:
		err = os.Remove(target)
	}
	if err != nil && !(os.IsNotExist(err) && !cfg.Strict) {
		return errored(fmt.Errorf("failed to delete %q: %w", cfg.Path, sanitizePath(err, sc.WorkDir)))
	}
	return succeeded(nil)
}
