package steps

import (
	"context"
	"fmt"

	"taskactions/internal/kargo/git"
)

// gitTreeClearer is git-clear (Kargo's git_tree_clearer.go): every file
// of a working tree removed, .git kept (untracked files are added first so
// that git rm takes them too). No output.
type gitTreeClearer struct{}

type gitClearConfig struct {
	Path string `json:"path"`
}

func (gitTreeClearer) Name() string { return "git-clear" }

func (g gitTreeClearer) Run(ctx context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[gitClearConfig](g.Name(), sc.Config)
	if err != nil {
		return errored(err)
	}
	p, err := Join(sc.WorkDir, cfg.Path)
	if err != nil {
		return errored(fmt.Errorf("error joining path %s with work dir %s: %w", cfg.Path, sc.WorkDir, err))
	}
	wt, err := git.LoadWorkTree(ctx, p, nil, false)
	if err != nil {
		return errored(fmt.Errorf("error loading working tree from %s: %w", cfg.Path, err))
	}
	if err := wt.AddAll(ctx); err != nil {
		return errored(fmt.Errorf("error adding all files to working tree at %s: %w", cfg.Path, err))
	}
	if err := wt.Clear(ctx); err != nil {
		return errored(fmt.Errorf("error clearing working tree at %s: %w", cfg.Path, err))
	}
	return succeeded(nil)
}
