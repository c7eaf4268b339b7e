package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/app"
	"taskactions/internal/kargo/git/gittest"
)

// Kargo's quickstart promotion (git-clone, git-clear, kustomize-set-image,
// kustomize-build, git-commit, git-push, with imageFrom()) against
// repositories the test serves on loopback.

// quickstartRepo is the quickstart's GitOps repository: a base and one
// overlay per Stage.
func quickstartRepo(t *testing.T, root, name string, stages ...string) string {
	t.Helper()
	files := map[string]string{
		"base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deploy.yaml\n",
		"base/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: kargo-demo\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: kargo-demo\n" +
			"  template:\n    metadata:\n      labels:\n        app: kargo-demo\n    spec:\n      containers:\n      - name: nginx\n        image: public.ecr.aws/nginx/nginx:placeholder\n",
	}
	for _, s := range stages {
		files["stages/"+s+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: kargo-demo-" + s + "\nresources:\n- ../../base\n"
	}
	return gittest.NewBare(t, root, name, "main", files)
}

// quickstartSteps is the quickstart's template, without argocd-update
// (there is no Argo CD here), with the repository's URL in vars.
func quickstartSteps() []kargoapi.PromotionStep {
	return []kargoapi.PromotionStep{
		pstep("git-clone", "", map[string]any{"repoURL": "${{ vars.gitopsRepo }}", "checkout": []any{
			map[string]any{"branch": "main", "path": "./src"},
			map[string]any{"branch": "stage/${{ ctx.stage }}", "create": true, "path": "./out"},
		}}),
		pstep("git-clear", "", map[string]any{"path": "./out"}),
		pstep("kustomize-set-image", "update", map[string]any{"path": "./src/base", "images": []any{
			map[string]any{"image": "${{ vars.imageRepo }}", "tag": "${{ imageFrom(vars.imageRepo).Tag }}"},
		}}),
		pstep("kustomize-build", "", map[string]any{"path": "./src/stages/${{ ctx.stage }}", "outPath": "./out"}),
		pstep("git-commit", "commit", map[string]any{"path": "./out", "message": "${{ outputs.update.commitMessage }}"}),
		pstep("git-push", "push", map[string]any{"path": "./out"}),
	}
}

func quickstartVars(repoURL string) []kargoapi.ExpressionVariable {
	return []kargoapi.ExpressionVariable{{Name: "gitopsRepo", Value: repoURL}, {Name: "imageRepo", Value: "public.ecr.aws/nginx/nginx"}}
}

// gitServer is a server that runs every plugin, with a credentials file.
func gitServer(t *testing.T, creds string, mutate func(*app.Config)) *server {
	t.Helper()
	dir := t.TempDir()
	credsFile := filepath.Join(dir, "creds.yaml")
	if err := os.WriteFile(credsFile, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := startServer(filepath.Join(dir, "data"), func(c *app.Config) {
		c.ExecutorTaskTypes = "*"
		c.KargoCredentialsFile = credsFile
		c.KargoCredentialsOverHTTP = true // the test's git server is on loopback, over HTTP
		if mutate != nil {
			mutate(c)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func credsFor(url, password string) string {
	return fmt.Sprintf("credentials:\n  - type: git\n    repoURL: %s\n    username: kargo\n    password: %s\n", url, password)
}

func TestQuickstartPromotion(t *testing.T) {
	root := t.TempDir()
	bare := quickstartRepo(t, root, "kargo-demo", "test", "uat")
	git := gittest.Serve(t, root, "kargo", "gitops-token-1234", false)
	url := git.URL + "/kargo-demo.git"
	s := gitServer(t, credsFor(url, "gitops-token-1234"), func(c *app.Config) { c.PromotionGitLocal = true })
	k := newKProject(t, s)
	k.createStage("test", direct(), quickstartVars(url), quickstartSteps()...)
	// uat clones the same repository over file:// (allowed here).
	k.createStage("uat", direct(), quickstartVars("file://"+bare), quickstartSteps()...)
	f := into[kargoapi.Freight](t, k.do("POST", "/freight", mustMarshal(t, map[string]any{
		"origin": map[string]any{"kind": "Warehouse", "name": "w"},
		"images": []any{map[string]any{"repoURL": "public.ecr.aws/nginx/nginx", "tag": "1.27.0"}},
	})), 201)

	for _, stage := range []string{"test", "uat"} {
		p := k.finished(k.promote(stage, f.Name).Name)
		if p.Status.Phase != kargoapi.PromotionPhaseSucceeded {
			t.Fatalf("%s: %s %q; steps %v", stage, p.Status.Phase, p.Status.Message, steps(p))
		}
		if got := strings.Join(steps(p), " "); got != "step-1=Succeeded step-2=Succeeded update=Succeeded step-4=Succeeded commit=Succeeded push=Succeeded" {
			t.Errorf("%s: steps %s", stage, got)
		}
		branch := "stage/" + stage
		head := gittest.Head(t, bare, branch)
		state := stateOf(t, p)
		push, _ := state["push"].(map[string]any)
		commit, _ := state["commit"].(map[string]any)
		if push["branch"] != branch || push["commit"] != head || commit["commit"] != head {
			t.Errorf("%s: outputs push %v commit %v; %s is at %s", stage, push, commit, branch, head)
		}
		msg := gittest.Git(t, bare, "log", "-1", "--format=%B", branch)
		if want := "Updated ./src/base to use new image\n\n- public.ecr.aws/nginx/nginx:1.27.0"; msg != want {
			t.Errorf("%s: commit message %q, want %q", stage, msg, want)
		}
		// The branch holds the rendered manifests only: git-clear took the
		// rest, kustomize-build wrote one file per resource.
		files := gittest.Git(t, bare, "ls-tree", "--name-only", branch)
		file := "kargo-demo-" + stage + "-deployment-kargo-demo.yaml" // <namespace>-<kind>-<name>
		manifest := gittest.Show(t, bare, branch, file)
		if files != file || !strings.Contains(manifest, "image: public.ecr.aws/nginx/nginx:1.27.0") ||
			!strings.Contains(manifest, "namespace: kargo-demo-"+stage) {
			t.Errorf("%s: files %q, manifest:\n%s", stage, files, manifest)
		}
		// Two commits: the branch's initial one (create) and the promotion's.
		if n := gittest.Git(t, bare, "rev-list", "--count", branch); n != "2" {
			t.Errorf("%s: %s commits", stage, n)
		}
		// The working directory is gone once the Promotion ended.
		eventually(t, 10*time.Second, "the working directory removed", func() bool {
			_, err := os.Stat(filepath.Join(s.dataDir, "kargo-work", k.name, runOf(p.Name)))
			return os.IsNotExist(err)
		})
	}
	if strings.Contains(readAllFiles(t, filepath.Join(s.dataDir, "outputs")), "gitops-token-1234") {
		t.Error("the password is in an action's outputs")
	}
}

// readAllFiles is every file under dir, concatenated ("" when none).
func readAllFiles(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			b.Write(c)
		}
		return nil
	})
	return b.String()
}

// A wrong credential, an unreachable repository, a malformed template and
// a local repository not allowed: each ends the Promotion Errored with
// Kargo's message, and the Stage's branch keeps the commit it had.
func TestQuickstartPromotionFailures(t *testing.T) {
	root := t.TempDir()
	bare := quickstartRepo(t, root, "kargo-demo", "creds", "gone", "broken", "local")
	other := quickstartRepo(t, root, "other", "creds")
	git := gittest.Serve(t, root, "kargo", "right-password-5678", false)
	url, otherURL := git.URL+"/kargo-demo.git", git.URL+"/other.git"
	s := gitServer(t, credsFor(url, "right-password-5678")+strings.TrimPrefix(credsFor(otherURL, "wrong-password-0000"), "credentials:\n"), nil)
	k := newKProject(t, s)
	heads := map[string]string{}
	for _, st := range []string{"creds", "gone", "broken", "local"} {
		heads[st] = gittest.Commit(t, bare, "stage/"+st, "earlier promotion", map[string]string{"deployment-kargo-demo.yaml": "old\n"})
	}
	heads["other"] = gittest.Commit(t, other, "stage/creds", "earlier promotion", map[string]string{"x": "old\n"})

	broken := quickstartSteps()
	broken[2] = pstep("kustomize-set-image", "update", map[string]any{"path": "./src/base", "images": []any{
		map[string]any{"image": "${{ vars.imageRepo }}", "tag": "${{ imageFrom(vars.imageRepo).Tag "},
	}})
	k.createStage("creds", direct(), quickstartVars(otherURL), quickstartSteps()...)
	k.createStage("gone", direct(), quickstartVars("http://127.0.0.1:9/kargo-demo.git"), quickstartSteps()...)
	k.createStage("broken", direct(), quickstartVars(url), broken...)
	k.createStage("local", direct(), quickstartVars("file://"+bare), quickstartSteps()...)
	f := k.createFreight("1.27.0", "")

	for st, want := range map[string][]string{
		"creds":  {`step "step-1" met error threshold of 1: error running step "step-1": error cloning ` + otherURL + `: error cloning repo "` + otherURL + `"`, "fatal: Authentication failed"},
		"gone":   {`step "step-1" met error threshold of 1: error running step "step-1": error cloning http://127.0.0.1:9/kargo-demo.git: error cloning repo`, "Failed to connect to 127.0.0.1 port 9"},
		"broken": {"an unrecoverable error occurred: failed to get step config: config field images[0].tag: error parsing template", `has no closing "}}"`},
		"local":  {`an unrecoverable error occurred: error running step "step-1": repository file://` + bare + ` is a local path or file:// URL: git steps may use repositories on this server's disk only when the server runs with --promotion-git-local`},
	} {
		p := k.finished(k.promote(st, f.Name).Name)
		t.Logf("%s: %s", st, p.Status.Message)
		if p.Status.Phase != kargoapi.PromotionPhaseErrored {
			t.Errorf("%s: %s %q", st, p.Status.Phase, p.Status.Message)
		}
		for _, w := range want {
			if !strings.Contains(p.Status.Message, w) {
				t.Errorf("%s: message %q, want it to have %q", st, p.Status.Message, w)
			}
		}
		if strings.Contains(p.Status.Message, "password-") || strings.Contains(mustMarshal(t, p.Status), "password-") {
			t.Errorf("%s: a password in the status", st)
		}
		// No step after the failure ran: git-push is Skipped.
		if m := record(p, "push"); m.Status != kargoapi.PromotionStepStatusSkipped {
			t.Errorf("%s: push %s", st, m.Status)
		}
	}
	for st, head := range heads {
		repo, branch := bare, "stage/"+st
		if st == "other" {
			repo, branch = other, "stage/creds"
		}
		if got := gittest.Head(t, repo, branch); got != head {
			t.Errorf("%s moved from %s to %s", branch, head, got)
		}
	}
	if strings.Contains(readAllFiles(t, filepath.Join(s.dataDir, "outputs")), "password-") {
		t.Error("a password is in an action's outputs")
	}
}
