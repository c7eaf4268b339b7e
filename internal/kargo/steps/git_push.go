package steps

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/credentials"
	"taskactions/internal/kargo/git"
)

// gitPusher is git-push (Kargo's git_pusher.go): the working tree's
// commits pushed to targetBranch, a generated branch
// (kargo/promotion/<Promotion>, forced) or the branch checked out, each
// attempt rebasing on the remote branch first; a push refused as not a
// fast-forward is retried (maxAttempts, default 10, with Kargo's backoff),
// a rebase conflict fails for good. Output: {"branch", "commit",
// "commitURL"} (commitURL is empty: no Git provider is known here).
type gitPusher struct {
	creds      credentials.Database
	allowLocal bool
	// backoff is the wait before attempt n (from 1); Kargo's: 1 s × 1.5^n,
	// ±50 %, at most 30 s.
	backoff func(n int) time.Duration

	mu       sync.Mutex
	branchMu map[string]*sync.Mutex
}

func newGitPusher(creds credentials.Database, allowLocal bool) *gitPusher {
	return &gitPusher{creds: creds, allowLocal: allowLocal, backoff: kargoBackoff, branchMu: map[string]*sync.Mutex{}}
}

func kargoBackoff(n int) time.Duration {
	d := float64(time.Second)
	for range n - 1 {
		d *= 1.5
	}
	d += d * 0.5 * rand.Float64() //nolint:gosec // jitter
	return min(time.Duration(d), 30*time.Second)
}

type gitPushConfig struct {
	Path                 string  `json:"path"`
	TargetBranch         string  `json:"targetBranch,omitempty"`
	GenerateTargetBranch bool    `json:"generateTargetBranch,omitempty"`
	MaxAttempts          *int64  `json:"maxAttempts,omitempty"`
	Provider             *string `json:"provider,omitempty"`
}

func (*gitPusher) Name() string { return "git-push" }

func (g *gitPusher) Run(ctx context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[gitPushConfig](g.Name(), sc.Config)
	if err != nil {
		return errored(err)
	}
	path, err := Join(sc.WorkDir, cfg.Path)
	if err != nil {
		return errored(fmt.Errorf("error joining path %s with work dir %s: %w", cfg.Path, sc.WorkDir, err))
	}
	// Loaded once for its remote's URL, then again with its credentials.
	wt, err := git.LoadWorkTree(ctx, path, nil, g.allowLocal)
	if err != nil {
		return errored(fmt.Errorf("error loading working tree from %s: %w", cfg.Path, err))
	}
	creds, err := repoCredentials(ctx, g.creds, sc.Project, wt.URL())
	if err != nil {
		return errored(err)
	}
	if creds != nil {
		if wt, err = git.LoadWorkTree(ctx, path, creds, g.allowLocal); err != nil {
			return errored(fmt.Errorf("error loading working tree from %s: %w", cfg.Path, err))
		}
	}
	opts := &git.PushOptions{TargetBranch: cfg.TargetBranch, PullRebase: true}
	if cfg.GenerateTargetBranch {
		opts.TargetBranch, opts.Force = "kargo/promotion/"+sc.Promotion, true
	}
	if opts.TargetBranch == "" {
		if opts.TargetBranch, err = wt.CurrentBranch(ctx); err != nil {
			return errored(fmt.Errorf("error getting current branch: %w", err))
		}
	}
	attempts := 10
	if cfg.MaxAttempts != nil {
		attempts = int(*cfg.MaxAttempts)
	}
	if err := g.pushWithRetries(ctx, wt, opts, attempts); err != nil {
		if errors.Is(err, git.ErrMergeConflict) {
			return Result{Status: kargoapi.PromotionStepStatusFailed}, &TerminalError{Err: err}
		}
		return errored(fmt.Errorf("error pushing commits to remote: %w", err))
	}
	id, err := wt.LastCommitID(ctx)
	if err != nil {
		return errored(fmt.Errorf("error getting last commit ID: %w", err))
	}
	return succeeded(map[string]any{"branch": opts.TargetBranch, "commit": id, "commitURL": ""})
}

// pushWithRetries retries a push refused as not a fast-forward.
func (g *gitPusher) pushWithRetries(ctx context.Context, wt *git.WorkTree, opts *git.PushOptions, attempts int) error {
	for n := 1; ; n++ {
		err := g.push(ctx, wt, opts)
		if err == nil || !errors.Is(err, git.ErrNonFastForward) || n >= attempts {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(g.backoff(n)):
		}
	}
}

// push holds the repository's branch while it rebases and pushes, so the
// Promotions of this server that push to one branch take turns.
func (g *gitPusher) push(ctx context.Context, wt *git.WorkTree, opts *git.PushOptions) error {
	k := credentials.NormalizeGitURL(wt.URL()) + ":" + opts.TargetBranch
	g.mu.Lock()
	mu := g.branchMu[k]
	if mu == nil {
		mu = &sync.Mutex{}
		g.branchMu[k] = mu
	}
	g.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	return wt.Push(ctx, opts)
}
