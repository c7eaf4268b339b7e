package git

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrMergeConflict: a rebase before a push stopped on a conflict, which
// only a person can resolve.
var ErrMergeConflict = errors.New("merge conflict")

// ErrNonFastForward: the remote refused a push that was not a
// fast-forward (someone pushed in between).
var ErrNonFastForward = errors.New("non-fast-forward")

// WorkTree is a working tree of a repository (Kargo's WorkTree).
type WorkTree struct {
	*baseRepo
	bare *BareRepo // nil for a plain clone
}

// LoadWorkTree opens a working tree that AddWorkTree (or Clone) made,
// with credentials for its remote (nil: none).
func LoadWorkTree(ctx context.Context, path string, creds *RepoCredentials, allowLocal bool) (*WorkTree, error) {
	w := &WorkTree{baseRepo: &baseRepo{creds: creds, dir: path, allowLocal: allowLocal}}
	repoDir, err := w.loadConfig(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.setupAuth(); err != nil {
		return nil, fmt.Errorf("error configuring the credentials: %w", err)
	}
	if repoDir != path {
		w.bare = &BareRepo{baseRepo: &baseRepo{creds: creds, dir: repoDir, homeDir: w.homeDir, url: w.url, allowLocal: allowLocal}}
	}
	return w, nil
}

// AddAll stages every change (git add .).
func (w *WorkTree) AddAll(ctx context.Context) error {
	if _, err := w.git(ctx, "add", "."); err != nil {
		return fmt.Errorf("error staging changes for commit: %w", err)
	}
	return nil
}

// Clean removes untracked files and directories.
func (w *WorkTree) Clean(ctx context.Context) error {
	if _, err := w.git(ctx, "clean", "-fd"); err != nil {
		return fmt.Errorf("error cleaning worktree: %w", err)
	}
	return nil
}

// Clear removes every tracked file (git rm -rf .).
func (w *WorkTree) Clear(ctx context.Context) error {
	if _, err := w.git(ctx, "rm", "-rf", "--ignore-unmatch", "."); err != nil {
		return fmt.Errorf("error clearing worktree: %w", err)
	}
	return nil
}

// Close removes the working tree.
func (w *WorkTree) Close(ctx context.Context) error {
	if w.bare != nil {
		return w.bare.RemoveWorkTree(ctx, w.dir)
	}
	return os.RemoveAll(w.homeDir)
}

// CommitOptions are the options of a commit.
type CommitOptions struct {
	AllowEmpty bool
	// Author overrides the clone's default author for this commit.
	Author *User
}

// Commit commits what is staged.
func (w *WorkTree) Commit(ctx context.Context, message string, opts *CommitOptions) error {
	if opts == nil {
		opts = &CommitOptions{}
	}
	args := []string{}
	if a := opts.Author; a != nil {
		if a.SigningKey != "" {
			return fmt.Errorf("error setting up author information for commit command: %w", ErrSigningUnsupported)
		}
		if strings.ContainsAny(a.Name+a.Email, "\n\r\x00") {
			return fmt.Errorf("error setting up author information for commit command: a line break in the author")
		}
		// The commit's author and committer, as Kargo's per-commit home
		// gives them.
		args = append(args, "-c", "user.name="+a.Name, "-c", "user.email="+a.Email)
	}
	args = append(args, "commit", "-m", message)
	if opts.AllowEmpty {
		args = append(args, "--allow-empty")
	}
	if _, err := w.git(ctx, args...); err != nil {
		return fmt.Errorf("error committing changes: %w", err)
	}
	return nil
}

// CommitMessage is the full message of a commit.
func (w *WorkTree) CommitMessage(ctx context.Context, id string) (string, error) {
	out, err := w.git(ctx, "log", "-n", "1", "--pretty=format:%B", id)
	if err != nil {
		return "", fmt.Errorf("error obtaining commit message for commit %q: %w", id, err)
	}
	return string(out), nil
}

// CreateOrphanedBranch switches to a new branch with no history, and
// removes untracked files.
func (w *WorkTree) CreateOrphanedBranch(ctx context.Context, branch string) error {
	if _, err := w.git(ctx, "switch", "--orphan", branch, "--discard-changes"); err != nil {
		return fmt.Errorf("error creating orphaned branch %q for repo %q: %w", branch, Redact(w.url), err)
	}
	return w.Clean(ctx)
}

// CurrentBranch is the branch checked out ("" on a detached HEAD).
func (w *WorkTree) CurrentBranch(ctx context.Context) (string, error) {
	out, err := w.git(ctx, "branch", "--show-current")
	if err != nil {
		return "", fmt.Errorf("error checking current branch for repo %q: %w", Redact(w.url), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// HasDiffs reports whether the working tree differs from HEAD (git
// status -s says anything).
func (w *WorkTree) HasDiffs(ctx context.Context) (bool, error) {
	out, err := w.git(ctx, "status", "-s")
	if err != nil {
		return false, fmt.Errorf("error checking status of branch: %w", err)
	}
	return len(out) > 0, nil
}

// IsRebasing reports whether a rebase is under way.
func (w *WorkTree) IsRebasing(ctx context.Context) (bool, error) {
	for _, p := range []string{"rebase-merge", "rebase-apply"} {
		out, err := w.git(ctx, "rev-parse", "--git-path", p)
		if err != nil {
			return false, fmt.Errorf("error determining rebase status: %w", err)
		}
		path := strings.TrimSpace(string(out))
		if !filepath.IsAbs(path) {
			path = filepath.Join(w.dir, path)
		}
		if _, err := os.Stat(path); err == nil {
			return true, nil
		} else if !os.IsNotExist(err) {
			return false, err
		}
	}
	return false, nil
}

// LastCommitID is HEAD's commit.
func (w *WorkTree) LastCommitID(ctx context.Context) (string, error) {
	out, err := w.git(ctx, "rev-parse", "HEAD")
	if err != nil {
		return "", fmt.Errorf("error obtaining ID of last commit: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ResetHard resets the working tree to HEAD.
func (w *WorkTree) ResetHard(ctx context.Context) error {
	if _, err := w.git(ctx, "reset", "--hard"); err != nil {
		return fmt.Errorf("error resetting branch working tree: %w", err)
	}
	return nil
}

// PushOptions are the options of a push.
type PushOptions struct {
	Force bool
	// TargetBranch is the remote branch (the current branch when empty).
	TargetBranch string
	// PullRebase rebases on the remote branch first, when it exists.
	PullRebase bool
}

// nonFastForward is Kargo's pattern of a push refused for not being a
// fast-forward.
var nonFastForward = regexp.MustCompile(`(?m)^\s*!\s+\[(?:remote )?rejected].+\((?:non-fast-forward|fetch first|cannot lock ref.*)\)\s*$`)

// Push pushes HEAD to the remote branch, rebasing on it first with
// PullRebase. A conflict in the rebase is ErrMergeConflict (the rebase is
// aborted, so the working tree is as it was); a refused non-fast-forward
// push wraps ErrNonFastForward.
func (w *WorkTree) Push(ctx context.Context, opts *PushOptions) error {
	if opts == nil {
		opts = &PushOptions{}
	}
	target := opts.TargetBranch
	if target == "" {
		var err error
		if target, err = w.CurrentBranch(ctx); err != nil {
			return err
		}
	}
	if opts.PullRebase {
		exists, err := w.RemoteBranchExists(ctx, target)
		if err != nil {
			return err
		}
		if exists {
			if _, err := w.git(ctx, "pull", "--rebase", "origin", target); err != nil {
				if rebasing, rerr := w.IsRebasing(ctx); rerr == nil && rebasing {
					_, _ = w.git(ctx, "rebase", "--abort")
					return ErrMergeConflict
				}
				return fmt.Errorf("error pulling and rebasing branch: %w", err)
			}
		}
	}
	args := []string{"push", "origin", "HEAD:" + target}
	if opts.Force {
		args = append(args, "--force")
	}
	if out, err := w.git(ctx, args...); err != nil {
		if nonFastForward.Match(out) {
			return fmt.Errorf("error pushing branch: %w", ErrNonFastForward)
		}
		return fmt.Errorf("error pushing branch: %w", err)
	}
	return nil
}
