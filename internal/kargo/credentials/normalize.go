package credentials

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

var scpSyntax = regexp.MustCompile(`^((?:[\w-]+@)?[\w-]+(?:\.[\w-]+)*)(?::(.*))?$`)

// NormalizeGitURL is Kargo's git.NormalizeURL (internal/git/git.go):
// lower case; for http(s) no user info, no trailing "/" or ".git"; for
// ssh:// and SCP-style [user@]host:path the ssh:// form without a trailing
// "/" or ".git". A URL it cannot read (one with a query, say) is returned
// as it is.
func NormalizeGitURL(repo string) string {
	orig := repo
	repo = strings.ToLower(repo)
	trim := func(p string) string { return strings.TrimSuffix(strings.TrimSuffix(p, "/"), ".git") }
	if strings.HasPrefix(repo, "http://") || strings.HasPrefix(repo, "https://") || strings.HasPrefix(repo, "ssh://") {
		u, err := url.Parse(repo)
		if err != nil || len(u.Query()) > 0 {
			return orig
		}
		if !strings.HasPrefix(repo, "ssh://") {
			u.User = nil
		}
		u.Path = trim(u.Path)
		return u.String()
	}
	m := scpSyntax.FindStringSubmatch(repo)
	if len(m) != 2 && len(m) != 3 {
		return orig
	}
	var path string
	if len(m) == 3 {
		path = m[2]
	}
	pu, err := url.Parse(path)
	if err != nil {
		return orig
	}
	pu.Path = trim(pu.Path)
	if pu.Path == "" {
		return fmt.Sprintf("ssh://%s", m[1])
	}
	return fmt.Sprintf("ssh://%s/%s", m[1], pu.String())
}

// NormalizeImageURL is Kargo's image.NormalizeURL: registry/repository as
// go-containerregistry reads the reference, Docker Hub's images without
// the registry and "library/".
func NormalizeImageURL(repoURL string) string {
	ref, err := name.ParseReference(repoURL, name.WeakValidation)
	if err != nil {
		return repoURL
	}
	reg, repo := ref.Context().Registry.Name(), ref.Context().RepositoryStr()
	if reg == "index.docker.io" || reg == "registry-1.docker.io" {
		return strings.TrimPrefix(repo, "library/")
	}
	return reg + "/" + repo
}

// NormalizeChartRepositoryURL is Kargo's helm.NormalizeChartRepositoryURL:
// trimmed, lower case, without "oci://", then as an image URL.
func NormalizeChartRepositoryURL(repo string) string {
	return NormalizeImageURL(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(repo)), "oci://"))
}

// normalize is a URL normalized for credentials of a type (Kargo
// normalizes git and helm URLs only: an image URL with a port would read
// as SCP-style).
func normalize(credType Type, u string) string {
	switch credType {
	case TypeGit:
		return NormalizeGitURL(u)
	case TypeHelm:
		return NormalizeChartRepositoryURL(u)
	}
	return u
}
