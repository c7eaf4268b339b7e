package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/git/gittest"
	"taskactions/pkg/client"
)

func (k *kproject) createWarehouse(doc string) kargoapi.Warehouse {
	k.t.Helper()
	return into[kargoapi.Warehouse](k.t, k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		return c.CreateWarehouseWithBodyWithResponse(ctx, k.name, "application/json", strings.NewReader(doc))
	}), http.StatusCreated)
}

// refreshWarehouse asks for a discovery now and returns the Warehouse once
// it is handled.
func (k *kproject) refreshWarehouse(name string) kargoapi.Warehouse {
	k.t.Helper()
	wait := true
	return into[kargoapi.Warehouse](k.t, k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		return c.RefreshWarehouseWithResponse(ctx, k.name, name, &client.RefreshWarehouseParams{Wait: &wait})
	}), http.StatusOK)
}

// freightOf is the Freight of a Warehouse, newest first.
func (k *kproject) freightOf(warehouse string) []kargoapi.Freight {
	k.t.Helper()
	var out []kargoapi.Freight
	for _, f := range into[kargoapi.FreightList](k.t, k.listFreight(), http.StatusOK).Items {
		if f.Origin.Name == warehouse {
			out = append(out, f)
		}
	}
	return out
}

// A Warehouse subscribed to a Git repository served over HTTP with a
// password (from the credentials file): semver tags become Freight of
// their commits, a new tag new Freight after a refresh, and a branch
// subscription with includePaths ignores commits elsewhere. A wrong
// password leaves the Warehouse unhealthy with Kargo's message, no
// Freight, and the password nowhere in what it says.
func TestWarehouseGitDiscovery(t *testing.T) {
	root := t.TempDir()
	bare := gittest.NewBare(t, root, "app", "main", map[string]string{"app/main.go": "package main\n"})
	first := gittest.Commit(t, bare, "main", "release one", map[string]string{"app/v": "1"})
	gittest.Git(t, bare, "tag", "v1.0.0", first)
	gittest.Git(t, bare, "tag", "not-a-version", first)
	gitSrv := gittest.Serve(t, root, "kargo", "git-token-4321", false)
	url := gitSrv.URL + "/app.git"
	wrong := gittest.Serve(t, root, "kargo", "other-token", false)
	wrongURL := wrong.URL + "/app.git"
	s := gitServer(t, credsFor(url, "git-token-4321")+strings.TrimPrefix(credsFor(wrongURL, "wrong-token-9999"), "credentials:\n"), nil)
	k := newKProject(t, s)
	k.createStage("test", direct(), nil) // makes the project

	k.createWarehouse(fmt.Sprintf(`{"metadata":{"name":"tags"},"spec":{"subscriptions":[{"git":{"repoURL":%q,"commitSelectionStrategy":"SemVer"}}]}}`, url))
	k.createWarehouse(fmt.Sprintf(`{"metadata":{"name":"branch"},"spec":{"subscriptions":[{"git":{"repoURL":%q,"branch":"main","includePaths":["app"]}}]}}`, url))
	k.createWarehouse(fmt.Sprintf(`{"metadata":{"name":"denied"},"spec":{"subscriptions":[{"git":{"repoURL":%q}}]}}`, wrongURL))

	// Freight is listed newest first to the second: look it up by commit.
	commitOf := func(w, id string) kargoapi.GitCommit {
		t.Helper()
		var c kargoapi.GitCommit
		eventually(t, 30*time.Second, "Freight of Warehouse "+w+" with commit "+id, func() bool {
			for _, f := range k.freightOf(w) {
				if len(f.Commits) == 1 && f.Commits[0].ID == id {
					c = f.Commits[0]
					return true
				}
			}
			return false
		})
		return c
	}
	if c := commitOf("tags", first); c.Tag != "v1.0.0" || c.RepoURL != url || c.Message != "release one" {
		t.Errorf("tag Freight: %+v", c)
	}
	if c := commitOf("branch", first); c.Branch != "main" || c.Tag != "" {
		t.Errorf("branch Freight: %+v", c)
	}
	w := k.refreshWarehouse("tags")
	if h := meta.FindStatusCondition(w.Status.Conditions, kargoapi.ConditionTypeHealthy); h == nil || h.Message != "Successfully discovered 1 commits from 1 subscriptions" {
		t.Errorf("Healthy: %+v", h)
	}

	// A new tag: new Freight on a refresh. A commit outside app/ is not
	// new Freight for the branch Warehouse; one inside is.
	second := gittest.Commit(t, bare, "main", "docs", map[string]string{"docs/readme": "hi"})
	gittest.Git(t, bare, "tag", "v1.1.0", second)
	t0 := time.Now()
	if w := k.refreshWarehouse("tags"); len(w.Status.DiscoveredArtifacts.Git[0].Commits) != 2 || w.Status.DiscoveredArtifacts.Git[0].Commits[0].Tag != "v1.1.0" {
		t.Errorf("discovered %+v", w.Status.DiscoveredArtifacts.Git)
	}
	if c := commitOf("tags", second); c.Tag != "v1.1.0" {
		t.Errorf("after the new tag: %+v", c)
	}
	t.Logf("tag pushed to Freight listed: %v", time.Since(t0))
	if w := k.refreshWarehouse("branch"); w.Status.LastFreightID != k.freightOf("branch")[0].Name || len(k.freightOf("branch")) != 1 {
		t.Errorf("a commit outside includePaths became Freight: %+v", k.freightOf("branch"))
	}
	third := gittest.Commit(t, bare, "main", "app change", map[string]string{"app/v": "2"})
	k.refreshWarehouse("branch")
	commitOf("branch", third)

	denied := k.refreshWarehouse("denied")
	ready := meta.FindStatusCondition(denied.Status.Conditions, kargoapi.ConditionTypeReady)
	if ready == nil || ready.Status != "False" || ready.Reason != "DiscoveryFailure" ||
		!strings.HasPrefix(ready.Message, "Artifact discovery failed: error discovering commits: failed to clone git repo") {
		t.Errorf("Ready of the Warehouse with a wrong password: %+v", ready)
	}
	if body := string(k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
		return c.GetWarehouseWithResponse(ctx, k.name, "denied")
	}).body); strings.Contains(body, "wrong-token-9999") {
		t.Errorf("the password is in the Warehouse: %s", body)
	}
	if fs := k.freightOf("denied"); len(fs) != 0 {
		t.Errorf("Freight of a failed discovery: %+v", fs)
	}
}
