package warehouses

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/rules"
)

func TestCheckArtifacts(t *testing.T) {
	commit := kargoapi.GitDiscoveryResult{RepoURL: "https://g/r", Commits: []kargoapi.DiscoveredCommit{{ID: "a"}, {ID: "b"}}}
	image := kargoapi.ImageDiscoveryResult{RepoURL: "reg/app", References: []kargoapi.DiscoveredImageReference{{Tag: "1.0.0"}}}
	chart := kargoapi.ChartDiscoveryResult{RepoURL: "oci://reg/chart", Versions: []string{"1.0.0", "0.9.0", "0.8.0"}}
	tests := []struct {
		name         string
		arts         *kargoapi.DiscoveredArtifacts
		ok           bool
		reason, want string
	}{
		{"nothing", &kargoapi.DiscoveredArtifacts{}, false, "MissingArtifacts", "No artifacts discovered"},
		{"no commits", &kargoapi.DiscoveredArtifacts{Git: []kargoapi.GitDiscoveryResult{{RepoURL: "https://g/r"}}, Images: []kargoapi.ImageDiscoveryResult{image}},
			false, "MissingCommits", `No commits discovered for Git repository "https://g/r"`},
		{"no references", &kargoapi.DiscoveredArtifacts{Images: []kargoapi.ImageDiscoveryResult{{RepoURL: "reg/app"}}},
			false, "MissingImageReferences", `No references discovered for image repository "reg/app"`},
		{"no chart versions", &kargoapi.DiscoveredArtifacts{Charts: []kargoapi.ChartDiscoveryResult{{RepoURL: "https://charts", Name: "c"}}},
			false, "MissingChartVersions", `No versions discovered for chart "c" from repository "https://charts"`},
		{"one kind", &kargoapi.DiscoveredArtifacts{Images: []kargoapi.ImageDiscoveryResult{image}},
			true, "ArtifactsDiscovered", "Successfully discovered 1 images from 1 subscriptions"},
		{"three kinds", &kargoapi.DiscoveredArtifacts{Git: []kargoapi.GitDiscoveryResult{commit}, Images: []kargoapi.ImageDiscoveryResult{image}, Charts: []kargoapi.ChartDiscoveryResult{chart}},
			true, "ArtifactsDiscovered", "Successfully discovered 2 commits, 1 images, and 3 charts from 3 subscriptions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			healthy, ready, ok := checkArtifacts(tt.arts, 7)
			if ok != tt.ok || ready.Reason != tt.reason || ready.Message != tt.want || healthy.Message != tt.want {
				t.Errorf("got %v %+v %+v", ok, ready, healthy)
			}
			want := metav1.ConditionFalse
			if tt.ok {
				want = metav1.ConditionTrue
			}
			if healthy.Status != want || ready.Status != want || ready.ObservedGeneration != 7 {
				t.Errorf("statuses %s %s, want %s", healthy.Status, ready.Status, want)
			}
		})
	}
}

// The Freight of a discovery is the first (newest) of each result, named
// by its content: the same artifacts found again name the same Freight.
func TestBuildFreight(t *testing.T) {
	arts := &kargoapi.DiscoveredArtifacts{
		Git: []kargoapi.GitDiscoveryResult{{RepoURL: "https://g/r", Commits: []kargoapi.DiscoveredCommit{
			{ID: "new", Branch: "main", Subject: "fix", Author: "A <a@x>"}, {ID: "old"}}}},
		Images: []kargoapi.ImageDiscoveryResult{{RepoURL: "reg/app", References: []kargoapi.DiscoveredImageReference{{Tag: "2.0.0", Digest: "sha256:2"}, {Tag: "1.0.0"}}}},
		Charts: []kargoapi.ChartDiscoveryResult{{RepoURL: "https://charts", Name: "c", Versions: []string{"1.2.3", "1.2.2"}}},
	}
	f, err := buildFreight("w", arts)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Commits) != 1 || f.Commits[0].ID != "new" || f.Commits[0].Message != "fix" || f.Commits[0].Branch != "main" ||
		len(f.Images) != 1 || f.Images[0].Tag != "2.0.0" || f.Images[0].Digest != "sha256:2" ||
		len(f.Charts) != 1 || f.Charts[0].Version != "1.2.3" || f.Origin.Name != "w" {
		t.Errorf("Freight %+v", f)
	}
	if f.Name != rules.GenerateFreightID(f) || len(f.Name) != 40 {
		t.Errorf("name %q", f.Name)
	}
	again, _ := buildFreight("w", arts)
	other, _ := buildFreight("w2", arts)
	if again.Name != f.Name || other.Name == f.Name {
		t.Errorf("names %s %s %s: the same artifacts of the same origin must name the same Freight", f.Name, again.Name, other.Name)
	}
	if _, err := buildFreight("w", &kargoapi.DiscoveredArtifacts{Images: []kargoapi.ImageDiscoveryResult{{RepoURL: "reg/app"}}}); err == nil {
		t.Error("Freight built without an image")
	}
}
