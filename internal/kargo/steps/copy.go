package steps

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// fileCopier is copy (Kargo's file_copier.go): a file, or a directory's
// contents, copied to outPath, skipping symbolic links, .git and what the
// ignore rules (.gitignore syntax) match. No output.
type fileCopier struct{}

type copyConfig struct {
	InPath  string `json:"inPath"`
	OutPath string `json:"outPath"`
	Ignore  string `json:"ignore,omitempty"`
}

func (fileCopier) Name() string { return "copy" }

func (f fileCopier) Run(_ context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[copyConfig](f.Name(), sc.Config)
	if err != nil {
		return errored(err)
	}
	in, err := Join(sc.WorkDir, cfg.InPath)
	if err != nil {
		return errored(fmt.Errorf("could not secure join inPath %q: %w", cfg.InPath, err))
	}
	out, err := Join(sc.WorkDir, cfg.OutPath)
	if err != nil {
		return errored(fmt.Errorf("could not secure join outPath %q: %w", cfg.OutPath, err))
	}
	matcher, err := ignoreRules(in, cfg.Ignore)
	if err != nil {
		return errored(fmt.Errorf("failed to load ignore rules: %w", err))
	}
	w, err := openWorkFS(sc.WorkDir)
	if err != nil {
		return errored(err)
	}
	defer w.Close()
	if err := copyTree(w, in, out, matcher); err != nil {
		return errored(fmt.Errorf("failed to copy %q to %q: %w", cfg.InPath, cfg.OutPath, sanitizePath(err, sc.WorkDir)))
	}
	return succeeded(nil)
}

// ignoreRules are .git and the rules, in the domain of inPath (the
// directory, or a file's directory).
func ignoreRules(in, rules string) (gitignore.Matcher, error) {
	fi, err := os.Lstat(in)
	if errors.Is(err, os.ErrNotExist) {
		return gitignore.NewMatcher(nil), nil // the copy fails, with its own error
	}
	if err != nil {
		return nil, fmt.Errorf("failed to determine domain: %w", err)
	}
	dir := in
	if !fi.IsDir() {
		dir = filepath.Dir(in)
	}
	domain := strings.Split(dir, string(filepath.Separator))
	ps := []gitignore.Pattern{gitignore.ParsePattern(".git", domain)}
	sc := bufio.NewScanner(strings.NewReader(rules))
	for sc.Scan() {
		if s := sc.Text(); !strings.HasPrefix(s, "#") && strings.TrimSpace(s) != "" {
			ps = append(ps, gitignore.ParsePattern(s, domain))
		}
	}
	return gitignore.NewMatcher(ps), nil
}

// copyTree copies src to dst as otiai10/copy does for Kargo: a directory
// recursively (into dst, merged with what is there), a file to dst;
// links and what the matcher ignores are skipped; modes kept. It writes
// through w: a link already under dst (from a cloned repository) that
// leads out of the working directory fails the copy.
func copyTree(w *workFS, src, dst string, m gitignore.Matcher) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if m.Match(strings.Split(src, string(filepath.Separator)), fi.IsDir()) {
		return nil
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return nil
	case fi.IsDir():
		if err := w.MkdirAll(dst, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := copyTree(w, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), m); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		return copyFile(w, src, dst, fi.Mode().Perm())
	}
	return nil // devices, sockets: nothing to copy
}

func copyFile(w *workFS, src, dst string, mode os.FileMode) error {
	if err := w.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	// dst must not be a link (a write would follow it).
	if fi, err := w.Lstat(dst); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if err := w.Remove(dst); err != nil {
			return err
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := w.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return w.Chmod(dst, mode)
}
