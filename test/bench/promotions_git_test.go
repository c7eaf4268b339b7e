package bench

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"taskactions/internal/kargo/git/gittest"
)

// BenchmarkQuickstartPromotion: Kargo's quickstart promotion (git-clone of
// two branches, git-clear, kustomize-set-image, kustomize-build,
// git-commit, git-push) of a new image tag, from POST .../promotions to
// Succeeded, against the same git commands run by hand in the same run
// (clone --bare, two worktree adds, rm, add, commit, push; the manifests
// written directly, no kustomize): the cost of the steps' plumbing,
// orchestration included. Over file://, so the repository's server is not
// measured.
func BenchmarkQuickstartPromotion(b *testing.B) {
	s := startServerEnv(b, executorEnv+"=*", gitLocalEnv+"=true")
	c := s.client(&http.Transport{})
	root := b.TempDir()
	base := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: demo\nspec:\n  template:\n    spec:\n      containers:\n      - name: nginx\n        image: public.ecr.aws/nginx/nginx:placeholder\n"
	bare := gittest.NewBare(b, root, "demo", "main", map[string]string{
		"base/kustomization.yaml":        "resources:\n- deploy.yaml\n",
		"base/deploy.yaml":               base,
		"stages/test/kustomization.yaml": "namespace: demo-test\nresources:\n- ../../base\n",
	})
	p := s.url + "/api/v1/projects/gitbench"
	stage := fmt.Appendf(nil, `{"metadata":{"name":"test"},"spec":{"requestedFreight":[{"origin":{"kind":"Warehouse","name":"w"},"sources":{"direct":true}}],
"vars":[{"name":"gitopsRepo","value":"file://%s"},{"name":"imageRepo","value":"public.ecr.aws/nginx/nginx"}],
"promotionTemplate":{"spec":{"steps":[
{"uses":"git-clone","config":{"repoURL":"${{ vars.gitopsRepo }}","checkout":[{"branch":"main","path":"./src"},{"branch":"stage/${{ ctx.stage }}","create":true,"path":"./out"}]}},
{"uses":"git-clear","config":{"path":"./out"}},
{"uses":"kustomize-set-image","as":"update","config":{"path":"./src/base","images":[{"image":"${{ vars.imageRepo }}","tag":"${{ imageFrom(vars.imageRepo).Tag }}"}]}},
{"uses":"kustomize-build","config":{"path":"./src/stages/${{ ctx.stage }}","outPath":"./out"}},
{"uses":"git-commit","as":"commit","config":{"path":"./out","message":"${{ outputs.update.commitMessage }}"}},
{"uses":"git-push","config":{"path":"./out"}}]}}}}`, bare)
	if err := post(c, p+"/stages", stage, http.StatusCreated); err != nil {
		b.Fatal(err)
	}
	gittest.Commit(b, bare, "hand/test", "Initial commit", map[string]string{"x": "x"})
	const reps = 10
	var promo, hand []time.Duration
	for i := range reps {
		tag := fmt.Sprintf("1.0.%d", i)
		var f object
		if err := postJSON(c, p+"/freight", fmt.Appendf(nil, `{"origin":{"kind":"Warehouse","name":"w"},"images":[{"repoURL":"public.ecr.aws/nginx/nginx","tag":%q}]}`, tag), http.StatusCreated, &f); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		var pr object
		if err := postJSON(c, p+"/stages/test/promotions", fmt.Appendf(nil, `{"freight":%q}`, f.Metadata.Name), http.StatusCreated, &pr); err != nil {
			b.Fatal(err)
		}
		waitFor(b, "the Promotion", 5*time.Millisecond, func() (bool, error) {
			var got object
			err := getJSON(c, p+"/promotions/"+pr.Metadata.Name, &got)
			if got.Status.Phase == "Errored" || got.Status.Phase == "Failed" {
				return false, fmt.Errorf("Promotion %s", got.Status.Phase)
			}
			return got.Status.Phase == "Succeeded", err
		})
		promo = append(promo, time.Since(start))

		start = time.Now()
		byHand(b, bare, tag)
		hand = append(hand, time.Since(start))
	}
	if n := gittest.Git(b, bare, "rev-list", "--count", "stage/test"); n != fmt.Sprint(reps+1) {
		b.Fatalf("stage/test has %s commits, want %d", n, reps+1)
	}
	slices.Sort(promo)
	slices.Sort(hand)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(promo[reps/2]), "promotion-p50-ms")
	b.ReportMetric(ms(hand[reps/2]), "by-hand-p50-ms")
	b.ReportMetric(ms(promo[reps/2])/ms(hand[reps/2]), "promotion/by-hand")
}

// byHand is the quickstart's git work as a person types it.
func byHand(b *testing.B, bare, tag string) {
	home := b.TempDir()
	repo := filepath.Join(home, "repo")
	gittest.Git(b, home, "clone", "-q", "--bare", "file://"+bare, repo)
	gittest.Git(b, repo, "worktree", "add", "-q", filepath.Join(home, "src"), "main")
	out := filepath.Join(home, "out")
	gittest.Git(b, repo, "worktree", "add", "-q", out, "hand/test")
	gittest.Git(b, out, "rm", "-rf", "-q", ".")
	manifest := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: demo\n  namespace: demo-test\nspec:\n  template:\n    spec:\n      containers:\n      - image: public.ecr.aws/nginx/nginx:" + tag + "\n        name: nginx\n"
	if err := os.WriteFile(filepath.Join(out, "demo-test-deployment-demo.yaml"), []byte(manifest), 0o644); err != nil {
		b.Fatal(err)
	}
	gittest.Git(b, out, "add", ".")
	gittest.Git(b, out, "commit", "-q", "-m", "Updated ./src/base to use new image\n\n- public.ecr.aws/nginx/nginx:"+tag)
	gittest.Git(b, out, "push", "-q", "origin", "HEAD:hand/test")
}
