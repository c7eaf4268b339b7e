package credentials

import (
	"regexp"
	"slices"
	"strings"
)

// entry is one set of credentials with the repositories it is for: a
// Secret or an entry of the file.
type entry struct {
	name       string // for sorting, and for errors
	repoURL    string
	isRegex    bool
	regex      *regexp.Regexp // compiled repoURL when isRegex (nil: it does not compile)
	username   string
	password   string
	sshKey     string
	hasRepoURL bool
}

// firstMatch is Kargo's getCredentialsSecret: the entries sorted by name,
// the first whose repoURL is a regular expression that matches the
// normalized repoURL, or that equals it once normalized. An entry without
// repoURL, or whose expression does not compile, is passed over.
func firstMatch(entries []entry, credType Type, repoURL string) *entry {
	slices.SortStableFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	want := normalize(credType, repoURL)
	for i := range entries {
		e := &entries[i]
		if !e.hasRepoURL {
			continue
		}
		if e.isRegex {
			if e.regex != nil && e.regex.MatchString(want) {
				return e
			}
			continue
		}
		if normalize(credType, e.repoURL) == want {
			return e
		}
	}
	return nil
}

func (e *entry) credentials() *Credentials {
	if e == nil {
		return nil
	}
	return usable(e.username, e.password, e.sshKey)
}
