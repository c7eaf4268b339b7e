package git

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// BareRepo is a bare clone, to which working trees are added (Kargo's
// BareRepo).
type BareRepo struct {
	*baseRepo
}

// BareCloneOptions are the options of a bare clone.
type BareCloneOptions struct {
	// BaseDir is where the clone's home directory is made (the system's
	// temporary directory when empty).
	BaseDir string
}

// CloneBare makes a bare clone of repoURL in a new home directory under
// opts.BaseDir (<home>/repo), set up to authenticate to the remote.
func CloneBare(ctx context.Context, repoURL string, clientOpts *ClientOptions, opts *BareCloneOptions) (*BareRepo, error) {
	if clientOpts == nil {
		clientOpts = &ClientOptions{}
	}
	if opts == nil {
		opts = &BareCloneOptions{}
	}
	homeDir, err := newHomeDir(opts.BaseDir, repoURL)
	if err != nil {
		return nil, err
	}
	b := &BareRepo{baseRepo: &baseRepo{
		creds: clientOpts.Credentials, dir: filepath.Join(homeDir, "repo"), homeDir: homeDir,
		url: repoURL, allowLocal: clientOpts.AllowLocal,
	}}
	if err := b.setupClient(clientOpts); err != nil {
		return nil, b.fail(err)
	}
	cmd := b.gitCommand(ctx, "clone", "--bare", repoURL, b.dir)
	cmd.Dir = homeDir
	if _, err := run(cmd, b.secrets()); err != nil {
		return nil, b.fail(fmt.Errorf("error cloning repo %q into %q: %w", Redact(repoURL), b.dir, err))
	}
	if err := b.saveDirs(ctx); err != nil {
		return nil, b.fail(err)
	}
	return b, nil
}

// newHomeDir makes a clone's home directory (symlinks resolved, as git
// reports paths resolved).
func newHomeDir(base, repoURL string) (string, error) {
	homeDir, err := os.MkdirTemp(base, "repo-")
	if err != nil {
		return "", fmt.Errorf("error creating home directory for repo %q: %w", Redact(repoURL), err)
	}
	if homeDir, err = filepath.EvalSymlinks(homeDir); err != nil {
		return "", fmt.Errorf("error resolving symlinks in path %s: %w", homeDir, err)
	}
	return homeDir, nil
}

// fail removes what a clone that failed made, and returns err.
func (b *baseRepo) fail(err error) error {
	_ = os.RemoveAll(b.homeDir)
	return err
}

// LoadBareRepo opens a bare repository cloned by CloneBare.
func LoadBareRepo(ctx context.Context, path string, creds *RepoCredentials, allowLocal bool) (*BareRepo, error) {
	b := &BareRepo{baseRepo: &baseRepo{creds: creds, dir: path, allowLocal: allowLocal}}
	if _, err := b.loadConfig(ctx); err != nil {
		return nil, err
	}
	if err := b.setupAuth(); err != nil {
		return nil, fmt.Errorf("error configuring the credentials: %w", err)
	}
	return b, nil
}

// AddWorkTreeOptions say what a new working tree checks out.
type AddWorkTreeOptions struct {
	// Orphan makes a new orphaned branch (Ref is ignored).
	Orphan bool
	// Ref is the branch, tag or commit to check out (the default branch
	// when empty).
	Ref string
}

// AddWorkTree adds a working tree at path.
func (b *BareRepo) AddWorkTree(ctx context.Context, path string, opts *AddWorkTreeOptions) (*WorkTree, error) {
	if opts == nil {
		opts = &AddWorkTreeOptions{}
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("error resolving absolute path for %s: %w", path, err)
	}
	paths, err := b.workTrees(ctx)
	if err != nil {
		return nil, err
	}
	if slices.Contains(paths, path) {
		return nil, fmt.Errorf("working tree already exists at %q", path)
	}
	args := []string{"worktree", "add", path}
	if opts.Orphan {
		args = append(args, "--orphan")
	} else if opts.Ref != "" {
		args = append(args, opts.Ref)
	}
	if _, err := b.git(ctx, args...); err != nil {
		return nil, fmt.Errorf("error adding working tree at %q: %w", path, err)
	}
	if path, err = filepath.EvalSymlinks(path); err != nil {
		return nil, fmt.Errorf("error resolving symlinks in path %s: %w", path, err)
	}
	return &WorkTree{baseRepo: &baseRepo{creds: b.creds, dir: path, homeDir: b.homeDir, url: b.url, allowLocal: b.allowLocal}, bare: b}, nil
}

// RemoveWorkTree removes the working tree at path, from the repository
// and the file system.
func (b *BareRepo) RemoveWorkTree(ctx context.Context, path string) error {
	paths, err := b.workTrees(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(paths, path) {
		return fmt.Errorf("no working tree exists at %q", path)
	}
	if _, err := b.git(ctx, "worktree", "remove", "--force", path); err != nil {
		return fmt.Errorf("error removing working tree at %q: %w", path, err)
	}
	return os.RemoveAll(path)
}

// Close removes the working trees and the clone with its home.
func (b *BareRepo) Close(ctx context.Context) error {
	paths, err := b.workTrees(ctx)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := b.RemoveWorkTree(ctx, p); err != nil {
			return err
		}
	}
	return os.RemoveAll(b.homeDir)
}

// WorkTreePaths are the paths of the repository's working trees.
func (b *BareRepo) WorkTreePaths(ctx context.Context) ([]string, error) { return b.workTrees(ctx) }

func (b *BareRepo) workTrees(ctx context.Context) ([]string, error) {
	out, err := b.git(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("error listing working trees: %w", err)
	}
	var paths []string
	var cur string
	bare := false
	flush := func() {
		if cur != "" && !bare {
			paths = append(paths, cur)
		}
		cur, bare = "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), " ")
		switch key {
		case "worktree":
			flush()
			cur = value
		case "bare":
			bare = true
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("error listing repository trees: error scanning worktree output: %w", err)
	}
	return paths, nil
}

// PushOrphanBranch makes branch a new branch with no history: one empty
// commit (message), pushed to the remote. (Kargo adds a working tree with
// `git worktree add --orphan`, which needs git 2.42; plumbing does the
// same with any git.)
func (b *BareRepo) PushOrphanBranch(ctx context.Context, branch, message string) error {
	tree, err := b.git(ctx, "mktree")
	if err != nil {
		return fmt.Errorf("error creating orphaned branch %q for repo %q: %w", branch, Redact(b.url), err)
	}
	commit, err := b.git(ctx, "commit-tree", strings.TrimSpace(string(tree)), "-m", message)
	if err != nil {
		return fmt.Errorf("error making initial commit to new branch %q of repo %s: %w", branch, Redact(b.url), err)
	}
	id := strings.TrimSpace(string(commit))
	if _, err := b.git(ctx, "update-ref", "refs/heads/"+branch, id); err != nil {
		return fmt.Errorf("error creating orphaned branch %q for repo %q: %w", branch, Redact(b.url), err)
	}
	if _, err := b.git(ctx, "push", "origin", "refs/heads/"+branch+":refs/heads/"+branch); err != nil {
		return fmt.Errorf("error pushing initial commit to new branch %q to repo %s: %w", branch, Redact(b.url), err)
	}
	return nil
}
