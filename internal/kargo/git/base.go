// Package git is Kargo's Git client (internal/controller/git in Kargo
// v1.6) over the git command, as Kargo's is: bare clones with working
// trees added to them (the promotion steps), plain clones (a Warehouse's
// discovery), commits, pushes with a rebase first, tags and history.
//
// Each clone has a home directory of its own (HOME for every command): its
// .gitconfig holds the author and TLS settings, .ssh its SSH key and
// config, askpass answers git's prompts from the environment of the one
// command. So a password is never in a URL, an argument or a file; an SSH
// key is in the home directory only, which callers keep outside anything
// a user can read back (the promotion steps' working directory).
//
// Which transports git may use is fenced with GIT_ALLOW_PROTOCOL: http,
// https, ssh and git, and file (local paths included) only with
// Options.AllowLocal.
package git

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

const (
	defaultUsername = "Kargo"
	defaultEmail    = "no-reply@kargo.io"
)

// RepoCredentials are the credentials of a remote repository.
type RepoCredentials struct {
	Username      string
	Password      string
	SSHPrivateKey string
}

// User is the author of commits.
type User struct {
	Name  string
	Email string
	// SigningKey is a GPG key to sign commits with (not supported here: see
	// ErrSigningUnsupported).
	SigningKey string
}

// ErrSigningUnsupported: Kargo signs commits with gpg; this server does
// not run gpg.
var ErrSigningUnsupported = fmt.Errorf("commit signing (signingKey) is not supported: it needs gpg, which this server does not run")

// ClientOptions are a repository client's options.
type ClientOptions struct {
	// User is the default author of commits (Kargo's defaults when nil).
	User *User
	// Credentials for the remote (none when nil).
	Credentials *RepoCredentials
	// InsecureSkipTLSVerify skips TLS verification with the remote (kept
	// in the clone's home, so later commands do too).
	InsecureSkipTLSVerify bool
	// AllowLocal lets git use file:// URLs and local paths.
	AllowLocal bool
}

// baseRepo is what a bare repository, a working tree and a plain clone
// share: where it is, its home, its remote and the credentials for it.
type baseRepo struct {
	creds      *RepoCredentials
	dir        string
	homeDir    string
	url        string
	allowLocal bool
}

// Dir is the repository's (or working tree's) absolute path.
func (b *baseRepo) Dir() string { return b.dir }

// HomeDir is the clone's home directory.
func (b *baseRepo) HomeDir() string { return b.homeDir }

// URL is the remote's URL.
func (b *baseRepo) URL() string { return b.url }

// secrets are what must never appear in a message.
func (b *baseRepo) secrets() []string {
	if b.creds == nil {
		return nil
	}
	return []string{b.creds.Password, b.creds.SSHPrivateKey}
}

// setupClient writes the clone's home: its .gitconfig (author, TLS) and
// its credential helpers.
func (b *baseRepo) setupClient(opts *ClientOptions) error {
	author := User{}
	if opts.User != nil {
		author = *opts.User
	}
	if author.SigningKey != "" {
		return ErrSigningUnsupported
	}
	if author.Name == "" {
		author.Name = defaultUsername
	}
	if author.Email == "" {
		author.Email = defaultEmail
	}
	cfg, err := gitConfig(author, opts.InsecureSkipTLSVerify)
	if err != nil {
		return fmt.Errorf("error configuring the author: %w", err)
	}
	if err := os.WriteFile(filepath.Join(b.homeDir, ".gitconfig"), []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("error configuring git user name: %w", err)
	}
	if err := b.setupAuth(); err != nil {
		return fmt.Errorf("error configuring the credentials: %w", err)
	}
	return nil
}

// gitConfig is a .gitconfig with the author and, if asked, no TLS
// verification.
func gitConfig(u User, insecure bool) (string, error) {
	name, err := configValue(u.Name)
	if err != nil {
		return "", fmt.Errorf("user name: %w", err)
	}
	email, err := configValue(u.Email)
	if err != nil {
		return "", fmt.Errorf("user email: %w", err)
	}
	cfg := fmt.Sprintf("[user]\n\tname = %s\n\temail = %s\n", name, email)
	if insecure {
		cfg += "[http]\n\tsslVerify = false\n"
	}
	return cfg, nil
}

// configValue quotes a value for a git config file.
func configValue(s string) (string, error) {
	if strings.ContainsAny(s, "\n\r\x00") {
		return "", fmt.Errorf("%q has a line break", s)
	}
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	return `"` + s + `"`, nil
}

// askpass answers git's prompts: the username, then the password, from
// the environment of the command that asks.
const askpass = `#!/bin/sh
case "$1" in
Username*) printf '%s\n' "$KARGO_GIT_USERNAME" ;;
*) printf '%s\n' "$KARGO_GIT_PASSWORD" ;;
esac
`

// setupAuth writes the home's SSH key and config, and the askpass helper
// (Kargo's setupAuth; the username is not put in the URL).
func (b *baseRepo) setupAuth() error {
	if err := os.WriteFile(filepath.Join(b.homeDir, "askpass"), []byte(askpass), 0o700); err != nil {
		return fmt.Errorf("error writing the askpass helper: %w", err)
	}
	if b.creds == nil || b.creds.SSHPrivateKey == "" {
		return nil
	}
	sshDir := filepath.Join(b.homeDir, ".ssh")
	if err := os.MkdirAll(sshDir, 0o700); err != nil {
		return fmt.Errorf("error creating SSH directory %q: %w", sshDir, err)
	}
	keyPath := filepath.Join(sshDir, "id_rsa")
	sshConfig := fmt.Sprintf("Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile=/dev/null\n  IdentityFile %q\n  IdentitiesOnly yes\n", keyPath)
	if err := os.WriteFile(filepath.Join(sshDir, "config"), []byte(sshConfig), 0o600); err != nil {
		return fmt.Errorf("error writing SSH config: %w", err)
	}
	key := b.creds.SSHPrivateKey
	if !strings.HasSuffix(key, "\n") {
		key += "\n" // ssh refuses a key without its final newline
	}
	if err := os.WriteFile(keyPath, []byte(key), 0o600); err != nil {
		return fmt.Errorf("error writing SSH key: %w", err)
	}
	return nil
}

// gitCommand is a git command in the repository's directory, with the
// clone's home and the credentials in its environment only.
func (b *baseRepo) gitCommand(ctx context.Context, args ...string) *exec.Cmd {
	cmd := commandContext(ctx, "git", args...)
	cmd.Dir = b.dir
	protocols := "http:https:ssh:git"
	if b.allowLocal {
		protocols += ":file"
	}
	cmd.Env = []string{
		"HOME=" + b.homeDir,
		"PATH=" + os.Getenv("PATH"),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ALLOW_PROTOCOL=" + protocols,
		"GIT_SSH_COMMAND=ssh -F " + filepath.Join(b.homeDir, ".ssh", "config"),
		"LC_ALL=C", // messages in English, as Kargo's (its patterns read them)
	}
	if b.creds != nil && b.creds.Password != "" {
		cmd.Env = append(cmd.Env,
			"GIT_ASKPASS="+filepath.Join(b.homeDir, "askpass"),
			"KARGO_GIT_USERNAME="+b.creds.Username,
			"KARGO_GIT_PASSWORD="+b.creds.Password)
	}
	for _, k := range []string{"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
		if v := os.Getenv(k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	return cmd
}

// git runs a git command in the repository.
func (b *baseRepo) git(ctx context.Context, args ...string) ([]byte, error) {
	return run(b.gitCommand(ctx, args...), b.secrets())
}

// saveDirs records the repository's directories in its config, for
// LoadWorkTree (Kargo's kargo.repoDir and kargo.repoHomeDir).
func (b *baseRepo) saveDirs(ctx context.Context) error {
	if _, err := b.git(ctx, "config", "kargo.repoDir", b.dir); err != nil {
		return fmt.Errorf("error saving repo dir as config: %w", err)
	}
	if _, err := b.git(ctx, "config", "kargo.repoHomeDir", b.homeDir); err != nil {
		return fmt.Errorf("error saving repo home dir as config: %w", err)
	}
	return nil
}

// loadConfig reads what saveDirs and the clone recorded: the repository's
// directory, its home and its remote's URL.
func (b *baseRepo) loadConfig(ctx context.Context) (repoDir string, err error) {
	out, err := b.git(ctx, "config", "--null", "--get-regexp", `^(kargo\.repodir|kargo\.repohomedir|remote\.origin\.url)$`)
	if err != nil {
		return "", fmt.Errorf("error reading repo dir from config: %w", err)
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		k, v, _ := strings.Cut(rec, "\n")
		switch k {
		case "kargo.repodir":
			repoDir = v
		case "kargo.repohomedir":
			b.homeDir = v
		case "remote.origin.url":
			b.url = v
		}
	}
	if repoDir == "" || b.homeDir == "" {
		return "", fmt.Errorf("error reading repo dir from config: %s is not a working tree of a repository cloned here", b.dir)
	}
	if b.url == "" {
		return "", fmt.Errorf(`error reading URL of remote "origin" from config: none`)
	}
	return repoDir, nil
}

// IsLocalURL reports whether a repository URL is a local one: file://, or
// a path (git reads anything without a scheme and no "host:" as one).
func IsLocalURL(repoURL string) bool {
	lower := strings.ToLower(repoURL)
	if strings.HasPrefix(lower, "file://") {
		return true
	}
	if u, err := url.Parse(repoURL); err == nil && u.Scheme != "" && len(u.Scheme) > 1 && strings.Contains(repoURL, "://") {
		return false
	}
	if strings.HasPrefix(repoURL, "/") || strings.HasPrefix(repoURL, ".") {
		return true
	}
	// git's rule: a colon before the first slash makes it scp-like
	// ([user@]host:path); no colon there is a local path.
	colon, slash := strings.Index(repoURL, ":"), strings.Index(repoURL, "/")
	return colon < 0 || (slash >= 0 && slash < colon)
}

// RemoteBranchExists reports whether the remote has branch.
func (b *baseRepo) RemoteBranchExists(ctx context.Context, branch string) (bool, error) {
	_, err := b.git(ctx, "ls-remote", "--heads", "--exit-code", b.url, branch)
	if ee, ok := err.(*ExitError); ok && ee.ExitCode == 2 {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("error checking for existence of branch %q in remote repo %q: %w", branch, Redact(b.url), err)
	}
	return true, nil
}
