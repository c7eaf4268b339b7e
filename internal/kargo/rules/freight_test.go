package rules

import (
	"crypto/sha1" // nolint:gosec
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

var warehouseW = kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "w"}

func TestNormalizeGitURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://github.com/akuity/kargo.git":       "https://github.com/akuity/kargo",
		"https://GitHub.com/Akuity/Kargo/":          "https://github.com/akuity/kargo",
		"https://user:pass@github.com/akuity/kargo": "https://github.com/akuity/kargo",
		"  https://github.com/akuity/kargo.git  ":   "https://github.com/akuity/kargo",
		"git@github.com:akuity/kargo.git":           "ssh://git@github.com/akuity/kargo",
		"ssh://git@github.com/akuity/kargo.git":     "ssh://git@github.com/akuity/kargo",
		"github.com":                                "ssh://github.com",
		"https://github.com/ak uity/kargo":          "https://github.com/ak uity/kargo",
		"https://github.com/akuity/kargo?ref=main":  "https://github.com/akuity/kargo?ref=main",
		"":                                    "",
		"http://localhost:8080/git/repo.git/": "http://localhost:8080/git/repo",
		"ssh://user:secret@host.example:22/repo.git": "ssh://user:secret@host.example:22/repo",
	} {
		if got := normalizeGitURL(in); got != want {
			t.Errorf("normalizeGitURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func sorted(s ...string) []string { slices.Sort(s); return s }

func TestGenerateFreightID(t *testing.T) {
	hash := func(s string) string { return fmt.Sprintf("%x", sha1.Sum([]byte(s))) } // nolint:gosec
	cases := []struct {
		name string
		f    kargoapi.Freight
		want string
	}{
		{
			"commits, images and charts, sorted",
			kargoapi.Freight{
				Origin:  warehouseW,
				Commits: []kargoapi.GitCommit{{RepoURL: "https://github.com/a/b.git", ID: "abc", Tag: "v1"}, {RepoURL: "git@github.com:a/c", ID: "def"}},
				Images:  []kargoapi.Image{{RepoURL: "nginx", Tag: "1.27", Digest: "sha256:1"}},
				Charts:  []kargoapi.Chart{{RepoURL: "OCI://ghcr.io/a/chart", Version: "1.0.0"}, {RepoURL: "https://charts.example", Name: "x", Version: "2"}},
			},
			hash("Warehouse/w:" + strings.Join(sorted(
				"ghcr.io/a/chart:1.0.0",
				"https:/charts.example/x:2", // path.Join cleans "//", as in Kargo
				"https://github.com/a/b:v1:abc",
				"nginx:1.27@sha256:1",
				"ssh://git@github.com/a/c:def",
			), "|")),
		},
		{
			"an image only",
			kargoapi.Freight{Origin: warehouseW, Images: []kargoapi.Image{{RepoURL: "r", Tag: "t"}}},
			hash("Warehouse/w:r:t@"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := GenerateFreightID(&tc.f); got != tc.want {
				t.Errorf("GenerateFreightID = %s, want %s", got, tc.want)
			}
		})
	}
	// Independent of metadata, alias, status and artifact order; dependent on the origin.
	a := cases[0].f.DeepCopy()
	a.Name, a.Alias = "x", "y"
	a.Commits[0], a.Commits[1] = a.Commits[1], a.Commits[0]
	a.Status.ApprovedFor = map[string]kargoapi.ApprovedStage{"s": {}}
	if GenerateFreightID(a) != cases[0].want {
		t.Error("ID depends on more than origin and artifacts")
	}
	a.Origin.Name = "other"
	if GenerateFreightID(a) == cases[0].want {
		t.Error("ID does not depend on the origin")
	}
}

func TestDefaultFreight(t *testing.T) {
	newFreight := func(alias string, labels map[string]string) *kargoapi.Freight {
		return &kargoapi.Freight{
			ObjectMeta: metav1.ObjectMeta{Name: "user-chosen", Labels: labels},
			Alias:      alias,
			Origin:     warehouseW,
			Images:     []kargoapi.Image{{RepoURL: "r", Tag: "t"}},
		}
	}
	gen := func() (string, error) { return "frosty-fox", nil }
	cases := []struct {
		name       string
		f          *kargoapi.Freight
		create     bool
		newAlias   func() (string, error)
		wantName   string // "" = the ID
		wantAlias  string
		wantLabels map[string]string
		wantErr    bool
	}{
		{"create: name is the ID, alias copied to the label", newFreight("a1", map[string]string{"team": "x"}), true, gen,
			"", "a1", map[string]string{"team": "x", kargoapi.LabelKeyAlias: "a1"}, false},
		{"create: alias generated", newFreight("", nil), true, gen,
			"", "frosty-fox", map[string]string{kargoapi.LabelKeyAlias: "frosty-fox"}, false},
		{"create: alias field overrides a stale label", newFreight("a1", map[string]string{kargoapi.LabelKeyAlias: "old"}), true, nil,
			"", "a1", map[string]string{kargoapi.LabelKeyAlias: "a1"}, false},
		{"create without a generator: alias from the label", newFreight("", map[string]string{kargoapi.LabelKeyAlias: "lbl"}), true, nil,
			"", "lbl", map[string]string{kargoapi.LabelKeyAlias: "lbl"}, false},
		{"create without a generator or label: no alias", newFreight("", nil), true, nil,
			"", "", nil, false},
		{"create: generator fails", newFreight("", nil), true, func() (string, error) { return "", errors.New("boom") },
			"", "", nil, true},
		{"update: name kept, label follows the field", newFreight("a2", map[string]string{kargoapi.LabelKeyAlias: "a1"}), false, gen,
			"user-chosen", "a2", map[string]string{kargoapi.LabelKeyAlias: "a2"}, false},
		{"update without alias: label removed", newFreight("", map[string]string{kargoapi.LabelKeyAlias: "a1", "team": "x"}), false, gen,
			"user-chosen", "", map[string]string{"team": "x"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := DefaultFreight(tc.f, tc.create, tc.newAlias)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if tc.wantErr {
				return
			}
			wantName := tc.wantName
			if wantName == "" {
				wantName = GenerateFreightID(tc.f)
			}
			if tc.f.Name != wantName || tc.f.Alias != tc.wantAlias || fmt.Sprint(tc.f.Labels) != fmt.Sprint(tc.wantLabels) {
				t.Errorf("got name %q alias %q labels %v; want %q %q %v", tc.f.Name, tc.f.Alias, tc.f.Labels, wantName, tc.wantAlias, tc.wantLabels)
			}
		})
	}
}

func TestValidateFreight(t *testing.T) {
	cases := []struct {
		name string
		f    kargoapi.Freight
		want []string
	}{
		{"valid", kargoapi.Freight{Origin: warehouseW, Commits: []kargoapi.GitCommit{{RepoURL: "r", ID: "1"}}}, nil},
		{"no artifacts", kargoapi.Freight{Origin: warehouseW},
			[]string{"freight must contain at least one commit, image, or chart"}},
		{"no origin", kargoapi.Freight{Charts: []kargoapi.Chart{{RepoURL: "r", Version: "1"}}},
			[]string{`origin.kind: Unsupported value: ""`, "origin.name: Required value"}},
		{"unknown origin kind", kargoapi.Freight{Origin: kargoapi.FreightOrigin{Kind: "Bucket", Name: "b"}, Images: []kargoapi.Image{{RepoURL: "r"}}},
			[]string{`origin.kind: Unsupported value: "Bucket": supported values: "Warehouse"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateFreight(&tc.f)
			if len(errs) != len(tc.want) {
				t.Fatalf("errors %v, want %v", errs, tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %q does not contain %q", errs[i].Error(), w)
				}
			}
		})
	}
}

func TestValidateFreightUpdate(t *testing.T) {
	base := &kargoapi.Freight{
		Origin:  warehouseW,
		Commits: []kargoapi.GitCommit{{RepoURL: "r", ID: "1"}},
		Images:  []kargoapi.Image{{RepoURL: "i", Tag: "1"}},
		Charts:  []kargoapi.Chart{{RepoURL: "c", Version: "1"}},
	}
	cases := []struct {
		name      string
		mutate    func(f *kargoapi.Freight)
		wantField string
	}{
		{"status, alias and labels may change", func(f *kargoapi.Freight) {
			f.Alias = "x"
			f.Labels = map[string]string{"a": "b"}
			f.Status.VerifiedIn = map[string]kargoapi.VerifiedStage{"s": {}}
		}, ""},
		{"origin", func(f *kargoapi.Freight) { f.Origin.Name = "v" }, "origin"},
		{"commit added", func(f *kargoapi.Freight) { f.Commits = append(f.Commits, kargoapi.GitCommit{}) }, "commits"},
		{"commit message", func(f *kargoapi.Freight) { f.Commits[0].Message = "m" }, "commits[0]"},
		{"image tag", func(f *kargoapi.Freight) { f.Images[0].Tag = "2" }, "images[0]"},
		{"images removed", func(f *kargoapi.Freight) { f.Images = nil }, "images"},
		{"chart version", func(f *kargoapi.Freight) { f.Charts[0].Version = "2" }, "charts[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := base.DeepCopy()
			tc.mutate(f)
			errs := ValidateFreightUpdate(base, f)
			if tc.wantField == "" {
				if len(errs) != 0 {
					t.Errorf("errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.wantField || errs[0].Detail != MsgFreightImmutable {
				t.Errorf("errors: %v", errs)
			}
		})
	}
}
