package steps

import (
	"context"
	"fmt"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/git"
)

// gitCommitter is git-commit (Kargo's git_commiter.go): every change of a
// working tree staged and committed with the message (and author, if
// given). Nothing to commit: Skipped. Output: {"commit": <HEAD>}.
type gitCommitter struct{ allowLocal bool }

type gitCommitConfig struct {
	Path    string     `json:"path"`
	Message string     `json:"message"`
	Author  *gitAuthor `json:"author,omitempty"`
}

func (gitCommitter) Name() string { return "git-commit" }

func (g gitCommitter) Run(ctx context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[gitCommitConfig](g.Name(), sc.Config)
	if err != nil {
		return errored(err)
	}
	path, err := Join(sc.WorkDir, cfg.Path)
	if err != nil {
		return errored(fmt.Errorf("error joining path %s with work dir %s: %w", cfg.Path, sc.WorkDir, err))
	}
	wt, err := git.LoadWorkTree(ctx, path, nil, g.allowLocal)
	if err != nil {
		return errored(fmt.Errorf("error loading working tree from %s: %w", cfg.Path, err))
	}
	if err := wt.AddAll(ctx); err != nil {
		return errored(fmt.Errorf("error adding all changes to working tree: %w", err))
	}
	hasDiffs, err := wt.HasDiffs(ctx)
	if err != nil {
		return errored(fmt.Errorf("error checking for diffs in working tree: %w", err))
	}
	if hasDiffs {
		opts := &git.CommitOptions{}
		if a := cfg.Author; a != nil {
			opts.Author = &git.User{Name: a.Name, Email: a.Email, SigningKey: a.SigningKey}
		}
		if err := wt.Commit(ctx, cfg.Message, opts); err != nil {
			return errored(fmt.Errorf("error committing to working tree: %w", err))
		}
	}
	id, err := wt.LastCommitID(ctx)
	if err != nil {
		return errored(fmt.Errorf("error getting last commit ID: %w", err))
	}
	status := kargoapi.PromotionStepStatusSucceeded
	if !hasDiffs {
		status = kargoapi.PromotionStepStatusSkipped
	}
	return Result{Status: status, Output: map[string]any{"commit": id}}, nil
}
