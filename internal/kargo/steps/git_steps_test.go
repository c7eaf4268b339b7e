package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/credentials"
	"taskactions/internal/kargo/git/gittest"
)

// fixedCreds is a credentials database with one entry.
type fixedCreds struct {
	url   string
	creds *credentials.Credentials
}

func (f fixedCreds) Get(_ context.Context, _ string, _ credentials.Type, repoURL string) (*credentials.Credentials, error) {
	if credentials.NormalizeGitURL(repoURL) == credentials.NormalizeGitURL(f.url) {
		return f.creds, nil
	}
	return nil, nil
}

// The quickstart's git steps over HTTP with a password: clone two
// branches (one made with create), clear, commit, push; outputs as Kargo's.
func TestGitStepsOverHTTP(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewBare(t, root, "app", "main", map[string]string{"base/deploy.yaml": "kind: Deployment\n"})
	tag := gittest.Git(t, bare, "rev-parse", "main")
	gittest.Git(t, bare, "tag", "v1.0.0", tag)
	srv := gittest.Serve(t, root, "kargo", "s3cret", false)
	url := srv.URL + "/app.git"
	creds := fixedCreds{url: url, creds: &credentials.Credentials{Username: "kargo", Password: "s3cret"}}
	clone := &gitCloner{creds: creds}
	push := newGitPusher(creds, false)
	sc := newStepContext(t, "")

	out := mustSucceed(t, clone, sc, fmt.Sprintf(`{"repoURL":%q,"checkout":[
		{"branch":"main","path":"./src"},
		{"branch":"stage/test","create":true,"path":"./out","as":"out"},
		{"tag":"v1.0.0","path":"./tagged"},
		{"commit":%q,"path":"./pinned"}]}`, url, tag))
	commits := out["commits"].(map[string]any)
	if commits["./src"] != tag || commits["./tagged"] != tag || commits["./pinned"] != tag || commits["out"] == "" {
		t.Fatalf("commits %v", commits)
	}
	if h := gittest.Head(t, bare, "stage/test"); h != commits["out"] {
		t.Fatalf("create pushed stage/test at %s, commits say %v", h, commits["out"])
	}
	if msg := gittest.Git(t, bare, "log", "-1", "--format=%s", "stage/test"); msg != "Initial commit" {
		t.Fatalf("the created branch's commit: %q", msg)
	}
	// Nothing of the clone's home (its credentials) is in the working dir.
	entries, _ := os.ReadDir(sc.WorkDir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "out,pinned,src,tagged" {
		t.Fatalf("working directory has %v", names)
	}

	mustSucceed(t, gitTreeClearer{}, sc, `{"path":"./out"}`)
	writeFiles(t, filepath.Join(sc.WorkDir, "out"), map[string]string{"manifests.yaml": "kind: Deployment\n"})
	out = mustSucceed(t, gitCommitter{}, sc, `{"path":"./out","message":"promote","author":{"name":"Ann","email":"ann@example.com"}}`)
	commit := out["commit"].(string)
	out = mustSucceed(t, push, sc, `{"path":"./out"}`)
	if want := map[string]any{"branch": "stage/test", "commit": commit, "commitURL": ""}; !reflect.DeepEqual(out, want) {
		t.Fatalf("git-push output %v, want %v", out, want)
	}
	if gittest.Head(t, bare, "stage/test") != commit || gittest.Show(t, bare, "stage/test", "manifests.yaml") != "kind: Deployment\n" {
		t.Fatal("stage/test is not the pushed commit")
	}
	// Nothing to commit: Skipped, with the same commit.
	res, err := run(t, gitCommitter{}, sc, `{"path":"./out","message":"again"}`)
	if err != nil || res.Status != kargoapi.PromotionStepStatusSkipped || res.Output["commit"] != commit {
		t.Fatalf("a commit of nothing: %+v %v", res, err)
	}
	// generateTargetBranch: kargo/promotion/<Promotion>, forced.
	out = mustSucceed(t, push, sc, `{"path":"./out","generateTargetBranch":true}`)
	if b := out["branch"]; b != "kargo/promotion/"+sc.Promotion || gittest.Head(t, bare, b.(string)) != commit {
		t.Fatalf("generated branch %v", out)
	}
}

func TestGitStepErrors(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewBare(t, root, "app", "main", map[string]string{"a": "a\n"})
	srv := gittest.Serve(t, root, "kargo", "s3cret", true)
	url := srv.URL + "/app.git"
	for _, c := range []struct {
		name   string
		runner Runner
		cfg    string
		want   string
		term   bool
	}{
		{"schema", &gitCloner{creds: fixedCreds{}}, `{"repoURL":"x"}`, "invalid git-clone config: (root): checkout is required", false},
		{"schema oneOf", &gitCloner{creds: fixedCreds{}}, `{"repoURL":"x","checkout":[{"branch":"a","tag":"b","path":"p"}]}`, "invalid git-clone config: checkout.0: Must validate one and only one schema (oneOf)", false},
		{"no config", gitTreeClearer{}, ``, "invalid git-clear config: (root): Invalid type. Expected: object, given: null", false},
		{"duplicate alias", &gitCloner{creds: fixedCreds{}}, `{"repoURL":"x","checkout":[{"path":"a","as":"x"},{"path":"b","as":"x"}]}`, `duplicate checkout alias "x" at checkout[1]`, false},
		{"local repo", &gitCloner{creds: fixedCreds{}}, fmt.Sprintf(`{"repoURL":"file://%s","checkout":[{"path":"a"}]}`, bare), "may use repositories on this server's disk only when the server runs with --promotion-git-local", true},
		{"wrong password", &gitCloner{creds: fixedCreds{url: url, creds: &credentials.Credentials{Username: "kargo", Password: "wrong-pass"}}},
			fmt.Sprintf(`{"repoURL":%q,"insecureSkipTLSVerify":true,"checkout":[{"path":"a"}]}`, url), "fatal: Authentication failed", false},
		{"TLS verified", &gitCloner{creds: fixedCreds{}}, fmt.Sprintf(`{"repoURL":%q,"checkout":[{"path":"a"}]}`, url), "certificate", false},
		{"unreachable", &gitCloner{creds: fixedCreds{}}, `{"repoURL":"http://127.0.0.1:1/app.git","checkout":[{"path":"a"}]}`, "error cloning http://127.0.0.1:1/app.git: error cloning repo", false},
		{"missing branch", &gitCloner{creds: fixedCreds{url: url, creds: &credentials.Credentials{Username: "kargo", Password: "s3cret"}}},
			fmt.Sprintf(`{"repoURL":%q,"insecureSkipTLSVerify":true,"checkout":[{"branch":"nope","path":"a"}]}`, url),
			`remote branch "nope" of repo ` + url + ` does not exist; set create=true`, false},
		{"path out", &gitCloner{creds: fixedCreds{url: url, creds: &credentials.Credentials{Username: "kargo", Password: "s3cret"}}},
			fmt.Sprintf(`{"repoURL":%q,"insecureSkipTLSVerify":true,"checkout":[{"path":"../a"}]}`, url), `path "../a" has a ".."`, false},
		{"not a work tree", gitCommitter{}, `{"path":".","message":"m"}`, "error loading working tree from .", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := newStepContext(t, "")
			res, err := run(t, c.runner, sc, c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) || IsTerminal(err) != c.term {
				t.Fatalf("%s %v (terminal %v), want %q (terminal %v)", res.Status, err, IsTerminal(err), c.want, c.term)
			}
			if res.Status != kargoapi.PromotionStepStatusErrored {
				t.Fatalf("status %s", res.Status)
			}
			if strings.Contains(err.Error(), "wrong-pass") || strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("a password in the message: %v", err)
			}
			// A failed clone leaves nothing behind.
			for _, d := range []string{sc.WorkDir, sc.GitHome} {
				if e, _ := os.ReadDir(d); len(e) != 0 {
					t.Fatalf("%s has %d entries after the failure", d, len(e))
				}
			}
		})
	}
}

// A push whose rebase conflicts fails for good (Kargo's Failed and
// TerminalError), and the remote keeps the other commit.
func TestGitPushConflict(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewBare(t, root, "app", "main", map[string]string{"a.txt": "a\n"})
	sc := newStepContext(t, "")
	mustSucceed(t, &gitCloner{creds: fixedCreds{}, allowLocal: true}, sc, fmt.Sprintf(`{"repoURL":"file://%s","checkout":[{"branch":"main","path":"w"}]}`, bare))
	writeFiles(t, filepath.Join(sc.WorkDir, "w"), map[string]string{"a.txt": "ours\n"})
	mustSucceed(t, gitCommitter{}, sc, `{"path":"w","message":"ours"}`)
	theirs := gittest.Commit(t, bare, "main", "theirs", map[string]string{"a.txt": "theirs\n"})
	res, err := run(t, newGitPusher(fixedCreds{}, true), sc, `{"path":"w"}`)
	if res.Status != kargoapi.PromotionStepStatusFailed || !IsTerminal(err) || err.Error() != "merge conflict" {
		t.Fatalf("%s %v", res.Status, err)
	}
	if gittest.Head(t, bare, "main") != theirs {
		t.Fatal("the remote moved")
	}
	o := outcomeOf(1, "push", res, err)
	if o.Status != kargoapi.PromotionStepStatusFailed || !o.Terminal || o.Message != `error running step "push": merge conflict` {
		t.Fatalf("outcome %+v", o)
	}
}
