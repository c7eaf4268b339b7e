package v1alpha1

import "maps"

// GitCommit describes a specific commit from a specific Git repository.
type GitCommit struct {
	// RepoURL is the URL of a Git repository.
	RepoURL string `json:"repoURL,omitempty"`
	// ID is the ID of a specific commit in the Git repository specified by
	// RepoURL.
	ID string `json:"id,omitempty"`
	// Branch denotes the branch of the repository where this commit was found.
	Branch string `json:"branch,omitempty"`
	// Tag denotes a tag in the repository that matched selection criteria and
	// resolved to this commit.
	Tag string `json:"tag,omitempty"`
	// Message is the message associated with the commit. At present, this only
	// contains the first line (subject) of the commit message.
	Message string `json:"message,omitempty"`
	// Author is the author of the commit.
	Author string `json:"author,omitempty"`
	// Committer is the person who committed the commit.
	Committer string `json:"committer,omitempty"`
}

// Image describes a specific version of a container image.
type Image struct {
	// RepoURL describes the repository in which the image can be found.
	RepoURL string `json:"repoURL,omitempty"`
	// GitRepoURL specifies the URL of a Git repository that contains the source
	// code for the image repository referenced by the RepoURL field if Kargo was
	// able to infer it.
	//
	// Deprecated: Use OCI annotations instead. Will be removed in v1.7.0.
	GitRepoURL string `json:"gitRepoURL,omitempty"`
	// Tag identifies a specific version of the image in the repository specified
	// by RepoURL.
	Tag string `json:"tag,omitempty"`
	// Digest identifies a specific version of the image in the repository
	// specified by RepoURL. This is a more precise identifier than Tag.
	Digest string `json:"digest,omitempty"`
	// Annotations is a map of arbitrary metadata for the image.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// DeepEquals returns a bool indicating whether the receiver deep-equals the
// provided Image. I.e., all fields must be equal.
func (i *Image) DeepEquals(other *Image) bool {
	if i == nil && other == nil {
		return true
	}
	if i == nil || other == nil {
		return false
	}
	return i.RepoURL == other.RepoURL &&
		i.GitRepoURL == other.GitRepoURL &&
		i.Tag == other.Tag &&
		i.Digest == other.Digest &&
		maps.Equal(i.Annotations, other.Annotations)
}

// Chart describes a specific version of a Helm chart.
type Chart struct {
	// RepoURL specifies the URL of a Helm chart repository. Classic chart
	// repositories (using HTTP/S) can contain differently named charts. When this
	// field points to such a repository, the Name field will specify the name of
	// the chart within the repository. In the case of a repository within an OCI
	// registry, the URL implicitly points to a specific chart and the Name field
	// will be empty.
	RepoURL string `json:"repoURL,omitempty"`
	// Name specifies the name of the chart.
	Name string `json:"name,omitempty"`
	// Version specifies a particular version of the chart.
	Version string `json:"version,omitempty"`
}

// DeepEquals returns a bool indicating whether the receiver deep-equals the
// provided Chart. I.e., all fields must be equal.
func (c *Chart) DeepEquals(other *Chart) bool {
	if c == nil && other == nil {
		return true
	}
	if c == nil || other == nil {
		return false
	}
	return c.RepoURL == other.RepoURL &&
		c.Name == other.Name &&
		c.Version == other.Version
}
