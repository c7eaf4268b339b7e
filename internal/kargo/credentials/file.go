package credentials

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/yaml"
)

// FileEntry is one entry of the credentials file: Kargo's credentials
// Secret as YAML, for the projects named (every project when none are).
type FileEntry struct {
	// Name names the entry in errors (optional).
	Name string `json:"name,omitempty"`
	// Projects the entry is for; empty: every project.
	Projects []string `json:"projects,omitempty"`
	// Type is git, helm, image or generic.
	Type Type `json:"type"`
	// RepoURL is the repository's URL, or with RepoURLIsRegex a regular
	// expression matched against the normalized URL.
	RepoURL        string `json:"repoURL"`
	RepoURLIsRegex bool   `json:"repoURLIsRegex,omitempty"`
	Username       string `json:"username,omitempty"`
	// Password is a password or a token.
	Password      string `json:"password,omitempty"`
	SSHPrivateKey string `json:"sshPrivateKey,omitempty"`
}

// fileDoc is the credentials file.
type fileDoc struct {
	Credentials []FileEntry `json:"credentials"`
}

// File is the credentials file as a Source. It is read again when it
// changes (its size or modification time), so credentials can be rotated
// without a restart; a change that does not parse is an error at lookup
// (the last good version is not kept: an operator who broke the file
// should hear of it).
type File struct {
	path string

	mu      sync.Mutex
	size    int64
	mtime   time.Time
	entries []FileEntry
	regexes []*regexp.Regexp
}

// LoadFile reads and checks the credentials file.
func LoadFile(path string) (*File, error) {
	f := &File{path: path}
	if err := f.refresh(); err != nil {
		return nil, err
	}
	return f, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// refresh reads the file again if it changed. The caller holds f.mu (or
// owns f).
func (f *File) refresh() error {
	st, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("credentials file: %w", err)
	}
	if f.entries != nil && st.Size() == f.size && st.ModTime().Equal(f.mtime) {
		return nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("credentials file: %w", err)
	}
	var doc fileDoc
	if err := yaml.UnmarshalStrict(b, &doc); err != nil {
		return fmt.Errorf("credentials file %s: %w", f.path, err)
	}
	regexes, err := checkEntries(doc.Credentials)
	if err != nil {
		return fmt.Errorf("credentials file %s: %w", f.path, err)
	}
	if doc.Credentials == nil {
		doc.Credentials = []FileEntry{}
	}
	f.entries, f.regexes, f.size, f.mtime = doc.Credentials, regexes, st.Size(), st.ModTime()
	return nil
}

// checkEntries validates the entries and compiles their expressions.
func checkEntries(entries []FileEntry) ([]*regexp.Regexp, error) {
	regexes := make([]*regexp.Regexp, len(entries))
	for i, e := range entries {
		where := fmt.Sprintf("credentials[%d]", i)
		if e.Name != "" {
			where += " (" + e.Name + ")"
		}
		switch e.Type {
		case TypeGit, TypeHelm, TypeImage, TypeGeneric:
		default:
			return nil, fmt.Errorf("%s: type must be git, helm, image or generic, not %q", where, e.Type)
		}
		if e.RepoURL == "" {
			return nil, fmt.Errorf("%s: repoURL is required", where)
		}
		if usable(e.Username, e.Password, e.SSHPrivateKey) == nil {
			return nil, fmt.Errorf("%s: needs a username and a password, or an sshPrivateKey", where)
		}
		if e.RepoURLIsRegex {
			re, err := regexp.Compile(e.RepoURL)
			if err != nil {
				return nil, fmt.Errorf("%s: repoURL is not a regular expression: %w", where, err)
			}
			regexes[i] = re
		}
	}
	return regexes, nil
}

// Lookup implements Source: the first entry, in the file's order, for the
// project and type whose repoURL matches (Kargo's rules, match.go).
func (f *File) Lookup(_ context.Context, project string, credType Type, repoURL string) (*Credentials, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refresh(); err != nil {
		return nil, err
	}
	var entries []entry
	for i, e := range f.entries {
		if e.Type != credType || (len(e.Projects) > 0 && !slices.Contains(e.Projects, project)) {
			continue
		}
		entries = append(entries, entry{
			name: fmt.Sprintf("%08d", i), repoURL: e.RepoURL, hasRepoURL: true, isRegex: e.RepoURLIsRegex, regex: f.regexes[i],
			username: e.Username, password: e.Password, sshKey: e.SSHPrivateKey,
		})
	}
	return firstMatch(entries, credType, repoURL).credentials(), nil
}
