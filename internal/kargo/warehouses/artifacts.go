package warehouses

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
)

// The pure half of the controller: what a discovery means for the
// Warehouse's conditions and which Freight it makes, as Kargo's
// validateDiscoveredArtifacts and buildFreightFromLatestArtifacts do.

// checkArtifacts is the Healthy condition of a discovery (Kargo's
// messages): false when a subscription found nothing, so that no Freight
// is made of a partial set; else a count of what was found.
func checkArtifacts(arts *kargoapi.DiscoveredArtifacts, generation int64) (healthy, ready metav1.Condition, ok bool) {
	fail := func(hReason, rReason, msg string) (metav1.Condition, metav1.Condition, bool) {
		return metav1.Condition{Type: kargoapi.ConditionTypeHealthy, Status: metav1.ConditionFalse, Reason: hReason, Message: msg, ObservedGeneration: generation},
			metav1.Condition{Type: kargoapi.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: rReason, Message: msg, ObservedGeneration: generation},
			false
	}
	if arts == nil || len(arts.Git)+len(arts.Images)+len(arts.Charts) == 0 {
		return fail("MissingArtifacts", "MissingArtifacts", "No artifacts discovered")
	}
	var commits, images, charts int
	for _, g := range arts.Git {
		if len(g.Commits) == 0 {
			return fail("NoCommitsDiscovered", "MissingCommits", fmt.Sprintf("No commits discovered for Git repository %q", g.RepoURL))
		}
		commits += len(g.Commits)
	}
	for _, i := range arts.Images {
		if len(i.References) == 0 {
			return fail("NoImageReferencesDiscovered", "MissingImageReferences", fmt.Sprintf("No references discovered for image repository %q", i.RepoURL))
		}
		images += len(i.References)
	}
	for _, c := range arts.Charts {
		if len(c.Versions) == 0 {
			msg := "No versions discovered for chart "
			if c.Name != "" {
				msg += fmt.Sprintf("%q", c.Name)
			}
			return fail("NoChartVersionsDiscovered", "MissingChartVersions", msg+fmt.Sprintf(" from repository %q", c.RepoURL))
		}
		charts += len(c.Versions)
	}
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{commits, "commits"}, {images, "images"}, {charts, "charts"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	healthy = metav1.Condition{
		Type: kargoapi.ConditionTypeHealthy, Status: metav1.ConditionTrue, Reason: "ArtifactsDiscovered",
		Message:            fmt.Sprintf("Successfully discovered %s from %d subscriptions", joinList(parts), len(arts.Git)+len(arts.Images)+len(arts.Charts)),
		ObservedGeneration: generation,
	}
	ready = metav1.Condition{Type: kargoapi.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "ArtifactsDiscovered", Message: healthy.Message, ObservedGeneration: generation}
	return healthy, ready, true
}

// joinList is "a", "a and b", or "a, b, and c".
func joinList(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	case 2:
		return parts[0] + " and " + parts[1]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + ", and " + parts[len(parts)-1]
}

// buildFreight is the Freight of the newest artifact of every
// subscription, named by its content as Kargo names it.
func buildFreight(warehouse string, arts *kargoapi.DiscoveredArtifacts) (*kargoapi.Freight, error) {
	if arts == nil {
		return nil, errors.New("no artifacts discovered")
	}
	f := &kargoapi.Freight{Origin: kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: warehouse}}
	for _, g := range arts.Git {
		if len(g.Commits) == 0 {
			return nil, fmt.Errorf("no commits discovered for repository %q", g.RepoURL)
		}
		c := g.Commits[0]
		f.Commits = append(f.Commits, kargoapi.GitCommit{RepoURL: g.RepoURL, ID: c.ID, Branch: c.Branch, Tag: c.Tag,
			Message: c.Subject, Author: c.Author, Committer: c.Committer})
	}
	for _, i := range arts.Images {
		if len(i.References) == 0 {
			return nil, fmt.Errorf("no images discovered for repository %q", i.RepoURL)
		}
		r := i.References[0]
		f.Images = append(f.Images, kargoapi.Image{RepoURL: i.RepoURL, Tag: r.Tag, Digest: r.Digest, Annotations: r.Annotations})
	}
	for _, c := range arts.Charts {
		if len(c.Versions) == 0 {
			return nil, fmt.Errorf("no versions discovered for chart %q from repository %q", c.Name, c.RepoURL)
		}
		f.Charts = append(f.Charts, kargoapi.Chart{RepoURL: c.RepoURL, Name: c.Name, Version: c.Versions[0]})
	}
	f.Name = rules.GenerateFreightID(f)
	return f, nil
}
