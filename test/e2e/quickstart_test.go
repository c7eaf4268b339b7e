package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/git/gittest"
)

// Kargo's quickstart, end to end, with every repository on loopback and
// served by the test: an image pushed to a registry becomes Freight of
// the Warehouse, is auto-promoted into test (the ProjectConfig says so),
// and promoted by request to uat and then prod; each promotion is a
// commit of rendered manifests on the Stage's branch naming the tag.
// A newer tag flows into test alone.
func TestQuickstartEndToEnd(t *testing.T) {
	repo, push := imageRegistry(t)
	push("1.0.0")
	root := t.TempDir()
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: kargo-demo\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: kargo-demo\n" +
		"  template:\n    metadata:\n      labels:\n        app: kargo-demo\n    spec:\n      containers:\n      - name: app\n        image: " + repo + ":placeholder\n"
	files := map[string]string{
		"base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deploy.yaml\n",
		"base/deploy.yaml":        deploy,
	}
	stages := []string{"test", "uat", "prod"}
	for _, s := range stages {
		files["stages/"+s+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: kargo-demo-" + s + "\nresources:\n- ../../base\n"
	}
	bare := gittest.NewBare(t, root, "kargo-demo", "main", files)
	gitSrv := gittest.Serve(t, root, "kargo", "quickstart-token-77", false)
	url := gitSrv.URL + "/kargo-demo.git"
	s := gitServer(t, credsFor(url, "quickstart-token-77"), nil)
	k := newKProject(t, s)

	vars := []kargoapi.ExpressionVariable{{Name: "gitopsRepo", Value: url}, {Name: "imageRepo", Value: repo}}
	k.createStage("test", direct(), vars, quickstartSteps()...)
	k.createStage("uat", from("test"), vars, quickstartSteps()...)
	k.createStage("prod", from("uat"), vars, quickstartSteps()...)
	into[kargoapi.ProjectConfig](t, k.putConfig(configDoc(k.name, policy("test", true))), http.StatusCreated)
	k.createWarehouse(fmt.Sprintf(`{"metadata":{"name":"w"},"spec":{"subscriptions":[{"image":{"repoURL":%q,"semverConstraint":"^1.0.0"}}]}}`, repo))

	freightOf := func(tag string) kargoapi.Freight {
		t.Helper()
		var got kargoapi.Freight
		eventually(t, 30*time.Second, "Freight of tag "+tag, func() bool {
			for _, f := range k.freightOf("w") {
				if len(f.Images) == 1 && f.Images[0].Tag == tag {
					got = f
					return true
				}
			}
			return false
		})
		return got
	}
	promoted := func(stage string, p kargoapi.Promotion, tag string) {
		t.Helper()
		if p = k.finished(p.Name); p.Status.Phase != kargoapi.PromotionPhaseSucceeded {
			t.Fatalf("%s: %s %q; steps %v", stage, p.Status.Phase, p.Status.Message, steps(p))
		}
		branch := "stage/" + stage
		msg := gittest.Git(t, bare, "log", "-1", "--format=%B", branch)
		manifest := gittest.Show(t, bare, branch, "kargo-demo-"+stage+"-deployment-kargo-demo.yaml")
		if !strings.Contains(msg, "- "+repo+":"+tag) || !strings.Contains(manifest, "image: "+repo+":"+tag) {
			t.Errorf("%s: commit %q, manifest:\n%s", stage, msg, manifest)
		}
	}

	f1 := freightOf("1.0.0")
	t0 := time.Now()
	promoted("test", k.autoPromotion("test", f1.Name), "1.0.0")
	t.Logf("auto-promotion into test ended %v after the Freight was listed", time.Since(t0))
	k.waitVerified(f1.Name, "test")
	if names := k.promotionNames("uat"); len(names) != 0 {
		t.Fatalf("uat was promoted without a request: %v", names)
	}
	promoted("uat", k.promote("uat", f1.Name), "1.0.0")
	k.waitVerified(f1.Name, "uat")
	promoted("prod", k.promote("prod", f1.Name), "1.0.0")

	// A newer tag: new Freight, into test on its own, and no further.
	push("1.1.0")
	k.refreshWarehouse("w")
	f2 := freightOf("1.1.0")
	promoted("test", k.autoPromotion("test", f2.Name), "1.1.0")
	for _, st := range []string{"uat", "prod"} {
		if n := len(k.promotionNames(st)); n != 1 {
			t.Errorf("%s has %d Promotions, want the one asked for", st, n)
		}
	}
}
