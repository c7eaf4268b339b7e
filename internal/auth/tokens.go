package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// TokenFile is the --auth-tokens-file: subjects with a token each (in
// clear, or as the hex SHA-256 of the token) and their grants.
//
//	subjects:
//	  - name: ci
//	    tokenSha256: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8
//	    grants:
//	      - {project: flytesnacks, domain: "*", verbs: [read, write, abort]}
type TokenFile struct {
	Subjects []TokenEntry `json:"subjects"`
}

// TokenEntry is one subject of a TokenFile.
type TokenEntry struct {
	Name        string   `json:"name"`
	Token       string   `json:"token,omitempty"`
	TokenSHA256 string   `json:"tokenSha256,omitempty"`
	Groups      []string `json:"groups,omitempty"`
	Grants      []Grant  `json:"grants"`
}

// MinTokenLength keeps guessable tokens out of the tokens file.
const MinTokenLength = 16

var scopeName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// LoadTokenFile reads and checks a tokens file (YAML or JSON). Unknown
// fields are errors, so a misspelt "grant" does not silently grant nothing.
func LoadTokenFile(path string) (*TokenFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	var f TokenFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return &f, nil
}

func (f *TokenFile) validate() error {
	seen := map[string]bool{}
	for i, e := range f.Subjects {
		where := fmt.Sprintf("subjects[%d]", i)
		if e.Name == "" {
			return fmt.Errorf("%s: name is required", where)
		}
		if seen[e.Name] {
			return fmt.Errorf("%s: subject %q appears twice", where, e.Name)
		}
		seen[e.Name] = true
		if _, err := e.hash(); err != nil {
			return fmt.Errorf("%s (%s): %w", where, e.Name, err)
		}
		for j, g := range e.Grants {
			if err := g.validate(); err != nil {
				return fmt.Errorf("%s (%s).grants[%d]: %w", where, e.Name, j, err)
			}
		}
	}
	return nil
}

func (e TokenEntry) hash() ([32]byte, error) {
	var h [32]byte
	switch {
	case (e.Token == "") == (e.TokenSHA256 == ""):
		return h, errors.New("give exactly one of token and tokenSha256")
	case e.Token != "":
		if len(e.Token) < MinTokenLength {
			return h, fmt.Errorf("token shorter than %d characters", MinTokenLength)
		}
		return sha256.Sum256([]byte(e.Token)), nil
	}
	b, err := hex.DecodeString(strings.ToLower(e.TokenSHA256))
	if err != nil || len(b) != len(h) {
		return h, errors.New("tokenSha256 is not 64 hex digits")
	}
	copy(h[:], b)
	return h, nil
}

func (g Grant) validate() error {
	for _, s := range []string{g.Project, g.Domain} {
		if s != Any && !scopeName.MatchString(s) {
			return fmt.Errorf("%q is neither a project or domain name nor %q", s, Any)
		}
	}
	if len(g.Verbs) == 0 {
		return errors.New("no verbs")
	}
	for _, v := range g.Verbs {
		if v != Any && !slices.Contains(Verbs, v) {
			return fmt.Errorf("unknown verb %q (want read, write, abort, execute or %q)", v, Any)
		}
	}
	return nil
}

// Tokens authenticates static bearer tokens. Tokens are kept only as their
// SHA-256, and looked up by it: the time a lookup takes says nothing about
// how close a guess was.
type Tokens struct {
	byHash map[[32]byte]*Subject
}

// NewTokens returns the tokens of f (which may be nil) plus extra, a
// token-subject pair such as the data dir's admin token.
func NewTokens(f *TokenFile, extra map[string]*Subject) (*Tokens, error) {
	t := &Tokens{byHash: map[[32]byte]*Subject{}}
	if f != nil {
		for _, e := range f.Subjects {
			h, err := e.hash()
			if err != nil {
				return nil, err
			}
			if _, dup := t.byHash[h]; dup {
				return nil, fmt.Errorf("subject %s: its token is another subject's too", e.Name)
			}
			t.byHash[h] = &Subject{Name: e.Name, Groups: e.Groups, Grants: e.Grants}
		}
	}
	for token, s := range extra {
		h := sha256.Sum256([]byte(token))
		if _, dup := t.byHash[h]; dup {
			return nil, fmt.Errorf("subject %s: its token is another subject's too", s.Name)
		}
		t.byHash[h] = s
	}
	return t, nil
}

// Lookup returns the subject of a token.
func (t *Tokens) Lookup(token string) (*Subject, bool) {
	return t.byHashed(sha256.Sum256([]byte(token)))
}

func (t *Tokens) byHashed(h [32]byte) (*Subject, bool) {
	s, ok := t.byHash[h]
	return s, ok
}
