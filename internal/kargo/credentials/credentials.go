// Package credentials finds the credentials of a repository for a Kargo
// project, as Kargo's credentials database does
// (internal/credentials/kubernetes/database.go in Kargo v1.6): promotion
// steps (git-clone, git-push, helm-update-chart, helm-template) use it, and
// so can a Warehouse controller.
//
// Two sources, tried in order:
//
//   - Kargo's Secrets (on a cluster only: the embedded control plane has no
//     core API): the Secrets of the project's namespace labelled
//     kargo.akuity.io/cred-type: git|helm|image|generic, with repoURL (and
//     repoURLIsRegex) and username/password or sshPrivateKey (secrets.go).
//   - The credentials file (--kargo-credentials-file): the same entries in
//     YAML, for every project or the ones named (file.go).
//
// Matching is Kargo's (match.go): the Secrets or entries sorted by name,
// the first whose repoURL equals the repository's URL once both are
// normalized for their type, or whose regular expression matches the
// normalized URL. As in Kargo, no credentials are given for an http:// URL
// unless AllowOverHTTP (Kargo's ALLOW_CREDENTIALS_OVER_HTTP).
//
// Credentials are never logged, nor put in an error: a lookup's errors name
// the Secret or entry, not its data.
package credentials

import (
	"context"
	"strings"
)

// Type is the kind of repository credentials are for (the value of
// Kargo's label kargo.akuity.io/cred-type).
type Type string

// Kargo's credential types.
const (
	TypeGit     Type = "git"
	TypeHelm    Type = "helm"
	TypeImage   Type = "image"
	TypeGeneric Type = "generic"
)

// LabelCredType is the label that marks a Secret as Kargo credentials.
const LabelCredType = "kargo.akuity.io/cred-type"

// Kargo's Secret data keys.
const (
	FieldRepoURL        = "repoURL"
	FieldRepoURLIsRegex = "repoURLIsRegex"
	FieldUsername       = "username"
	FieldPassword       = "password"
	FieldSSHPrivateKey  = "sshPrivateKey"
)

// Credentials are what a repository is accessed with: a username and a
// password (or token), or an SSH private key.
type Credentials struct {
	Username      string
	Password      string
	SSHPrivateKey string
}

// String never shows the secrets (a %v of Credentials in a log or an
// error stays harmless).
func (c Credentials) String() string {
	switch {
	case c.SSHPrivateKey != "":
		return "credentials{ssh key}"
	case c.Password != "":
		return "credentials{username " + c.Username + ", password}"
	}
	return "credentials{}"
}

// Secrets are the strings of c that must not be shown.
func (c *Credentials) Secrets() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, s := range []string{c.Password, c.SSHPrivateKey} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Database finds the credentials of a repository for a project.
type Database interface {
	// Get returns the credentials for repoURL in project, nil when there
	// are none.
	Get(ctx context.Context, project string, credType Type, repoURL string) (*Credentials, error)
}

// Source is one place credentials are kept (Kargo's Secrets, the file).
type Source interface {
	// Lookup is the first matching entry's credentials, nil when none
	// matches.
	Lookup(ctx context.Context, project string, credType Type, repoURL string) (*Credentials, error)
}

// Chain is the Database over sources, tried in order.
type Chain struct {
	Sources []Source
	// AllowOverHTTP gives credentials for http:// URLs too (Kargo's
	// ALLOW_CREDENTIALS_OVER_HTTP): by default they would cross the
	// network in clear, so none are given.
	AllowOverHTTP bool
}

// Get implements Database.
func (c *Chain) Get(ctx context.Context, project string, credType Type, repoURL string) (*Credentials, error) {
	if c == nil {
		return nil, nil
	}
	if !c.AllowOverHTTP && strings.HasPrefix(strings.ToLower(repoURL), "http://") {
		return nil, nil
	}
	for _, s := range c.Sources {
		if s == nil {
			continue
		}
		creds, err := s.Lookup(ctx, project, credType, repoURL)
		if err != nil || creds != nil {
			return creds, err
		}
	}
	return nil, nil
}

// usable is Kargo's basic provider: a username and a password, or an SSH
// key; anything else is no credentials.
func usable(username, password, sshKey string) *Credentials {
	if (username != "" && password != "") || sshKey != "" {
		return &Credentials{Username: username, Password: password, SSHPrivateKey: sshKey}
	}
	return nil
}

// Redact replaces every secret of creds in s.
func Redact(s string, creds *Credentials) string {
	for _, secret := range creds.Secrets() {
		s = strings.ReplaceAll(s, secret, "***")
	}
	return s
}
