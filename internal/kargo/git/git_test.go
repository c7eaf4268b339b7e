package git_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"taskactions/internal/kargo/git"
	"taskactions/internal/kargo/git/gittest"
)

// A bare clone over HTTP with a password (askpass, never in the URL nor
// the messages), a working tree, a commit and a push with a rebase on a
// commit someone else pushed meanwhile.
func TestCloneCommitPushOverHTTP(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	bare := gittest.NewBare(t, root, "app", "main", map[string]string{"a.txt": "a\n"})
	srv := gittest.Serve(t, root, "kargo", "s3cret-token", false)
	url := srv.URL + "/app.git"

	// A wrong password: the clone fails, says so, and shows no password.
	_, err := git.CloneBare(ctx, url, &git.ClientOptions{Credentials: &git.RepoCredentials{Username: "kargo", Password: "wrong-password"}},
		&git.BareCloneOptions{BaseDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "Authentication failed") || strings.Contains(err.Error(), "wrong-password") {
		t.Fatalf("clone with a wrong password: %v", err)
	}

	home := t.TempDir()
	repo, err := git.CloneBare(ctx, url, &git.ClientOptions{Credentials: &git.RepoCredentials{Username: "kargo", Password: "s3cret-token"}},
		&git.BareCloneOptions{BaseDir: home})
	if err != nil {
		t.Fatal(err)
	}
	if cfg, _ := os.ReadFile(filepath.Join(repo.Dir(), "config")); strings.Contains(string(cfg), "s3cret") {
		t.Fatalf("the password is in the clone's config:\n%s", cfg)
	}
	work := filepath.Join(t.TempDir(), "main")
	wt, err := repo.AddWorkTree(ctx, work, &git.AddWorkTreeOptions{Ref: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "a.txt")); string(b) != "a\n" {
		t.Fatalf("a.txt: %q", b)
	}
	if err := os.WriteFile(filepath.Join(work, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Loaded again from the path alone, as a later step does.
	wt, err = git.LoadWorkTree(ctx, work, &git.RepoCredentials{Username: "kargo", Password: "s3cret-token"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if wt.URL() != url {
		t.Fatalf("URL %q, want %q", wt.URL(), url)
	}
	if err := wt.AddAll(ctx); err != nil {
		t.Fatal(err)
	}
	if d, err := wt.HasDiffs(ctx); err != nil || !d {
		t.Fatalf("HasDiffs: %v %v", d, err)
	}
	if err := wt.Commit(ctx, "add b", &git.CommitOptions{Author: &git.User{Name: "Ann", Email: "ann@example.com"}}); err != nil {
		t.Fatal(err)
	}
	theirs := gittest.Commit(t, bare, "main", "theirs", map[string]string{"c.txt": "c\n"})
	if err := wt.Push(ctx, &git.PushOptions{PullRebase: true}); err != nil {
		t.Fatal(err)
	}
	head := gittest.Head(t, bare, "main")
	if id, _ := wt.LastCommitID(ctx); id != head {
		t.Fatalf("remote main %s, local HEAD %s", head, id)
	}
	if parent := gittest.Git(t, bare, "rev-parse", "main^"); parent != theirs {
		t.Fatalf("pushed commit's parent %s, want the rebased-on %s", parent, theirs)
	}
	if a := gittest.Git(t, bare, "log", "-1", "--format=%an <%ae>", "main"); a != "Ann <ann@example.com>" {
		t.Fatalf("author %q", a)
	}
}

// A rebase that conflicts is ErrMergeConflict, and leaves the working
// tree as it was (the rebase aborted); the remote is untouched.
func TestPushMergeConflict(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	bare := gittest.NewBare(t, root, "app", "main", map[string]string{"a.txt": "a\n"})
	repo, err := git.CloneBare(ctx, "file://"+bare, &git.ClientOptions{AllowLocal: true}, &git.BareCloneOptions{BaseDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "w")
	wt, err := repo.AddWorkTree(ctx, work, &git.AddWorkTreeOptions{Ref: "main"})
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(work, "a.txt"), []byte("ours\n"), 0o644)
	if err := wt.AddAll(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wt.Commit(ctx, "ours", nil); err != nil {
		t.Fatal(err)
	}
	theirs := gittest.Commit(t, bare, "main", "theirs", map[string]string{"a.txt": "theirs\n"})
	err = wt.Push(ctx, &git.PushOptions{PullRebase: true})
	if !errors.Is(err, git.ErrMergeConflict) {
		t.Fatalf("push: %v, want a merge conflict", err)
	}
	if r, _ := wt.IsRebasing(ctx); r {
		t.Fatal("still rebasing")
	}
	if h := gittest.Head(t, bare, "main"); h != theirs {
		t.Fatalf("remote main moved to %s", h)
	}
}

// Local repositories are refused unless allowed, by git itself.
func TestLocalReposFenced(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewBare(t, root, "app", "main", map[string]string{"a.txt": "a\n"})
	for _, u := range []string{"file://" + bare, bare} {
		_, err := git.CloneBare(context.Background(), u, nil, &git.BareCloneOptions{BaseDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "transport 'file' not allowed") {
			t.Errorf("%s: %v, want git's refusal", u, err)
		}
		if !git.IsLocalURL(u) {
			t.Errorf("IsLocalURL(%q) = false", u)
		}
	}
	for u, local := range map[string]bool{
		"https://github.com/a/b.git": false, "ssh://git@host/a/b": false, "git@github.com:a/b.git": false,
		"./rel": true, "rel/dir": true, "C:/x": false, "file:///x": true, "host:path": false,
	} {
		if got := git.IsLocalURL(u); got != local {
			t.Errorf("IsLocalURL(%q) = %v, want %v", u, got, local)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:tok@host/x.git": "https://user:***@host/x.git",
		"https://host/x.git":          "https://host/x.git",
		"fatal: 'x' ssh://git@h/x":    "fatal: 'x' ssh://git@h/x",
	} {
		if got := git.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
