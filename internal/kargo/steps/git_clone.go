package steps

import (
	"context"
	"fmt"

	"taskactions/internal/kargo/credentials"
	"taskactions/internal/kargo/git"
)

// gitCloner is git-clone (Kargo's git_cloner.go): a bare clone of
// repoURL, and a working tree at each checkout's path, of a branch (made
// as an empty orphan branch and pushed, with create), a tag, a commit or
// the default branch. Output: {"commits": {<as or path>: <HEAD>}}.
//
// The clone's home (its credentials) is in StepContext.GitHome, not in
// the working directory. A clone that fails leaves nothing behind.
type gitCloner struct {
	creds      credentials.Database
	allowLocal bool
}

type gitAuthor struct {
	Name       string `json:"name"`
	Email      string `json:"email"`
	SigningKey string `json:"signingKey,omitempty"`
}

type gitCloneConfig struct {
	RepoURL               string     `json:"repoURL"`
	InsecureSkipTLSVerify bool       `json:"insecureSkipTLSVerify,omitempty"`
	Author                *gitAuthor `json:"author,omitempty"`
	Checkout              []struct {
		As     string `json:"as,omitempty"`
		Branch string `json:"branch,omitempty"`
		Commit string `json:"commit,omitempty"`
		Tag    string `json:"tag,omitempty"`
		Create bool   `json:"create,omitempty"`
		Path   string `json:"path"`
	} `json:"checkout"`
}

func (g *gitCloner) Name() string { return "git-clone" }

func (g *gitCloner) Run(ctx context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[gitCloneConfig](g.Name(), sc.Config)
	if err != nil {
		return errored(err)
	}
	seen := map[string]bool{}
	for i, c := range cfg.Checkout {
		if c.As != "" && seen[c.As] {
			return errored(fmt.Errorf("duplicate checkout alias %q at checkout[%d]", c.As, i))
		}
		seen[c.As] = c.As != ""
	}
	if !g.allowLocal && git.IsLocalURL(cfg.RepoURL) {
		return errored(&TerminalError{Err: errLocalRepo(cfg.RepoURL)})
	}
	return g.run(ctx, sc, cfg)
}

// errLocalRepo refuses a repository on the server's own disk.
func errLocalRepo(repoURL string) error {
	return fmt.Errorf("repository %s is a local path or file:// URL: git steps may use repositories on this server's disk only when the server runs with --promotion-git-local", git.Redact(repoURL))
}

func (g *gitCloner) run(ctx context.Context, sc *StepContext, cfg gitCloneConfig) (Result, error) {
	creds, err := repoCredentials(ctx, g.creds, sc.Project, cfg.RepoURL)
	if err != nil {
		return errored(err)
	}
	var user *git.User
	if a := cfg.Author; a != nil {
		user = &git.User{Name: a.Name, Email: a.Email, SigningKey: a.SigningKey}
	}
	repo, err := git.CloneBare(ctx, cfg.RepoURL,
		&git.ClientOptions{User: user, Credentials: creds, InsecureSkipTLSVerify: cfg.InsecureSkipTLSVerify, AllowLocal: g.allowLocal},
		&git.BareCloneOptions{BaseDir: sc.GitHome})
	if err != nil {
		return errored(fmt.Errorf("error cloning %s: %w", git.Redact(cfg.RepoURL), err))
	}
	commits := map[string]any{}
	for _, c := range cfg.Checkout {
		ref := c.Tag
		switch {
		case c.Branch != "":
			ref = c.Branch
			if err := ensureRemoteBranch(ctx, repo, ref, c.Create); err != nil {
				return g.fail(repo, fmt.Errorf("error ensuring existence of remote branch %s: %w", ref, err))
			}
		case c.Commit != "":
			ref = c.Commit
		}
		path, err := Join(sc.WorkDir, c.Path)
		if err != nil {
			return g.fail(repo, fmt.Errorf("error joining path %s with work dir %s: %w", c.Path, sc.WorkDir, err))
		}
		wt, err := repo.AddWorkTree(ctx, path, &git.AddWorkTreeOptions{Ref: ref})
		if err != nil {
			return g.fail(repo, fmt.Errorf("error adding work tree %s to repo %s: %w", c.Path, git.Redact(cfg.RepoURL), err))
		}
		k := c.Path
		if c.As != "" {
			k = c.As
		}
		if commits[k], err = wt.LastCommitID(ctx); err != nil {
			return g.fail(repo, fmt.Errorf("error resolving HEAD for worktree at %s: %w", path, err))
		}
	}
	return succeeded(map[string]any{"commits": commits})
}

// fail removes the clone and the working trees it added.
func (g *gitCloner) fail(repo *git.BareRepo, err error) (Result, error) {
	_ = repo.Close(context.WithoutCancel(context.Background()))
	return errored(err)
}

// repoCredentials are the git credentials of a repository, if any.
func repoCredentials(ctx context.Context, db credentials.Database, project, repoURL string) (*git.RepoCredentials, error) {
	c, err := db.Get(ctx, project, credentials.TypeGit, repoURL)
	if err != nil {
		return nil, fmt.Errorf("error getting credentials for %s: %w", git.Redact(repoURL), err)
	}
	if c == nil {
		return nil, nil
	}
	return &git.RepoCredentials{Username: c.Username, Password: c.Password, SSHPrivateKey: c.SSHPrivateKey}, nil
}

// ensureRemoteBranch is Kargo's: nothing when the remote has the branch;
// without create an error; with create an empty orphan branch with one
// empty commit, pushed.
func ensureRemoteBranch(ctx context.Context, repo *git.BareRepo, branch string, create bool) error {
	exists, err := repo.RemoteBranchExists(ctx, branch)
	if err != nil {
		return fmt.Errorf("error checking if remote branch %q of repo %s exists: %w", branch, git.Redact(repo.URL()), err)
	}
	if exists {
		return nil
	}
	if !create {
		return fmt.Errorf("remote branch %q of repo %s does not exist; set create=true if you'd like a non-existent remote branch to be automatically created at checkout", branch, git.Redact(repo.URL()))
	}
	return repo.PushOrphanBranch(ctx, branch, "Initial commit")
}
