package warehouses

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/git"
	"taskactions/internal/kargo/git/gittest"
)

// gitRepo is a bare repository with a history the strategies tell apart:
// five commits on main touching app/ and docs/ in turn, tags that are and
// are not semantic versions (one annotated), and a second branch.
func gitRepo(t *testing.T) (bare string, ids []string) {
	t.Helper()
	root := t.TempDir()
	bare = gittest.NewBare(t, root, "repo", "main", nil)
	for i, c := range []struct{ msg, path string }{
		{"first", "app/a"}, {"docs only", "docs/readme"}, {"app change", "app/b"},
		{"both", "app/c"}, {"docs again", "docs/more"},
	} {
		ids = append(ids, gittest.Commit(t, bare, "main", c.msg, map[string]string{c.path: c.msg + string(rune('0'+i))}))
	}
	tag := func(name, id string, annotated bool) {
		args := []string{"tag", name, id}
		if annotated {
			args = []string{"tag", "-a", "-m", "release " + name, name, id}
		}
		gittest.Git(t, bare, args...)
	}
	tag("v1.0.0", ids[0], false)
	tag("v1.1.0", ids[1], true)
	tag("v2.0.0-rc.1", ids[2], false)
	tag("v1.2.0", ids[3], false)
	tag("nightly-2024-01-02", ids[4], false)
	gittest.Commit(t, bare, "release", "on release", map[string]string{"x": "y"})
	return bare, ids
}

func TestDiscoverCommits(t *testing.T) {
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		t.Fatal("git is needed: it is what Kargo's discovery runs too")
	}
	bare, ids := gitRepo(t)
	src := gitSource{client: git.ClientOptions{AllowLocal: true}, baseDir: t.TempDir()}
	url := "file://" + bare
	tests := []struct {
		name     string
		sub      kargoapi.GitSubscription
		wantIDs  []string
		wantTags []string
	}{
		{"newest from branch", kargoapi.GitSubscription{Branch: "main"}, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, nil},
		{"limit", kargoapi.GitSubscription{DiscoveryLimit: 2}, []string{ids[4], ids[3]}, nil},
		{"include paths", kargoapi.GitSubscription{IncludePaths: []string{"app"}}, []string{ids[3], ids[2], ids[0]}, nil},
		{"exclude glob", kargoapi.GitSubscription{ExcludePaths: []string{"glob:docs/**"}}, []string{ids[3], ids[2], ids[0]}, nil},
		{"include regex, limit", kargoapi.GitSubscription{IncludePaths: []string{`regex:^docs/`}, DiscoveryLimit: 1}, []string{ids[4]}, nil},
		{"expression", kargoapi.GitSubscription{ExpressionFilter: `subject contains "docs"`}, []string{ids[4], ids[1]}, nil},
		{"other branch", kargoapi.GitSubscription{Branch: "release", DiscoveryLimit: 1}, nil, nil},
		{"semver", kargoapi.GitSubscription{CommitSelectionStrategy: kargoapi.CommitSelectionStrategySemVer, StrictSemvers: true},
			[]string{ids[2], ids[3], ids[1], ids[0]}, []string{"v2.0.0-rc.1", "v1.2.0", "v1.1.0", "v1.0.0"}},
		{"semver constraint", kargoapi.GitSubscription{CommitSelectionStrategy: kargoapi.CommitSelectionStrategySemVer, SemverConstraint: "^1.1.0"},
			[]string{ids[3], ids[1]}, []string{"v1.2.0", "v1.1.0"}},
		{"semver with paths", kargoapi.GitSubscription{CommitSelectionStrategy: kargoapi.CommitSelectionStrategySemVer, IncludePaths: []string{"docs"}},
			[]string{ids[1]}, []string{"v1.1.0"}},
		{"lexical allow", kargoapi.GitSubscription{CommitSelectionStrategy: kargoapi.CommitSelectionStrategyLexical, AllowTags: `^v1\.`},
			[]string{ids[3], ids[1], ids[0]}, []string{"v1.2.0", "v1.1.0", "v1.0.0"}},
		{"lexical ignore", kargoapi.GitSubscription{CommitSelectionStrategy: kargoapi.CommitSelectionStrategyLexical, IgnoreTags: []string{"v2.0.0-rc.1", "v1.2.0"}, DiscoveryLimit: 2},
			[]string{ids[1], ids[0]}, []string{"v1.1.0", "v1.0.0"}},
		{"tag expression", kargoapi.GitSubscription{CommitSelectionStrategy: kargoapi.CommitSelectionStrategyNewestTag, ExpressionFilter: `annotation != ""`},
			[]string{ids[1]}, []string{"v1.1.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.sub.RepoURL = url
			res, err := discoverCommits(context.Background(), tt.sub, src)
			if err != nil {
				t.Fatal(err)
			}
			var gotIDs, gotTags []string
			for _, c := range res.Commits {
				gotIDs = append(gotIDs, c.ID)
				if c.Tag != "" {
					gotTags = append(gotTags, c.Tag)
				}
				if c.Subject == "" || c.CreatorDate == nil || !strings.HasPrefix(c.Author, "Test <") {
					t.Errorf("commit %+v lacks its metadata", c)
				}
			}
			if tt.name == "other branch" {
				if len(gotIDs) != 1 || res.Commits[0].Subject != "on release" || res.Commits[0].Branch != "release" {
					t.Errorf("release branch: %+v", res.Commits)
				}
				return
			}
			if !slices.Equal(gotIDs, tt.wantIDs) || !slices.Equal(gotTags, tt.wantTags) {
				t.Errorf("commits %v tags %v\nwant %v tags %v", short(gotIDs), gotTags, short(tt.wantIDs), tt.wantTags)
			}
		})
	}
	entries, err := os.ReadDir(src.baseDir)
	if err != nil || len(entries) != 0 {
		t.Errorf("clones left behind: %v %v", entries, err)
	}
}

func TestDiscoverCommitsRefused(t *testing.T) {
	bare, _ := gitRepo(t)
	tests := []struct {
		name  string
		sub   kargoapi.GitSubscription
		local bool
		want  string
	}{
		{"local repo without the flag", kargoapi.GitSubscription{RepoURL: bare}, false, "only when the server runs with --promotion-git-local"},
		{"no such repo", kargoapi.GitSubscription{RepoURL: "file://" + bare + "-not"}, true, "failed to clone git repo"},
		{"no such branch", kargoapi.GitSubscription{RepoURL: bare, Branch: "nope"}, true, "failed to clone git repo"},
		{"bad expression", kargoapi.GitSubscription{RepoURL: bare, ExpressionFilter: "subject ==="}, true, "error compiling expression filter"},
		{"bad glob", kargoapi.GitSubscription{RepoURL: bare, IncludePaths: []string{"glob:[a"}}, true, `parse error path selector "glob:[a"`},
		{"bad constraint", kargoapi.GitSubscription{RepoURL: bare, CommitSelectionStrategy: kargoapi.CommitSelectionStrategySemVer, SemverConstraint: "^^1"},
			true, `error parsing semver constraint "^^1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := gitSource{client: git.ClientOptions{AllowLocal: tt.local}, baseDir: t.TempDir()}
			_, err := discoverCommits(context.Background(), tt.sub, src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func short(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[:min(7, len(id))]
	}
	return out
}

func TestPathFilter(t *testing.T) {
	tests := []struct {
		include, exclude []string
		paths            []string
		want             bool
	}{
		{[]string{"app"}, nil, []string{"app/x"}, true},
		{[]string{"app"}, nil, []string{"apps/x"}, false},
		{[]string{"app"}, nil, []string{"docs/x", "app/deep/y"}, true},
		{nil, []string{"docs"}, []string{"docs/x"}, false},
		{nil, []string{"docs"}, []string{"docs/x", "main.go"}, true},
		{[]string{"glob:**/*.yaml"}, nil, []string{"a/b/c.yaml"}, true},
		{[]string{"glob:*.yaml"}, nil, []string{"a/b/c.yaml"}, false},
		{[]string{"regexp:^env/(dev|prod)/"}, []string{"glob:env/prod/secret*"}, []string{"env/prod/secret.txt"}, false},
		{[]string{"regexp:^env/(dev|prod)/"}, []string{"glob:env/prod/secret*"}, []string{"env/prod/app.txt"}, true},
	}
	for _, tt := range tests {
		f, err := newPathFilter(tt.include, tt.exclude)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.matches(tt.paths); got != tt.want {
			t.Errorf("include %v exclude %v on %v: %v, want %v", tt.include, tt.exclude, tt.paths, got, tt.want)
		}
	}
}
