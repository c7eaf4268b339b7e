package e2e

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

// The Warehouse API (kargo.akuity.io/v1alpha1) over real HTTP with the
// generated client and the admin token, and with kubectl on the embedded
// control plane: the CRD is Kargo's, the webhook rules and messages too.

func warehouseDoc(name, repo string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"shard":"east","subscriptions":[{"image":{"repoURL":%q}}]}}`, name, repo)
}

func warehouseOf(t testing.TB, r generated, want int) kargoapi.Warehouse {
	t.Helper()
	if r.StatusCode() != want {
		t.Fatalf("HTTP %d, want %d: %s", r.StatusCode(), want, r.GetBody())
	}
	var w kargoapi.Warehouse
	mustJSON(t, r.GetBody(), &w)
	return w
}

// Create, get, list, stream, refresh, replace and delete a Warehouse;
// Kargo's defaults (interval, freightCreationPolicy, discoveryLimit) and
// its shard label come back. It reads better whole: one Warehouse's life,
// in order.
func TestWarehouseREST(t *testing.T) {
	ns := stageProject()
	ctx, cancel := stageCtx()
	defer cancel()
	s := openStream(t, srv.http, fmt.Sprintf("%s/api/v1/projects/%s/warehouse-events", srv.URL(), ns), "")
	if evs := s.untilSynced(t); len(evs) != 1 {
		t.Fatalf("snapshot of a new project: %v", evs)
	}

	cr, err := srv.api.CreateWarehouseWithBodyWithResponse(ctx, ns, "application/json", strings.NewReader(warehouseDoc("w", "example.com/app")))
	if err != nil {
		t.Fatal(err)
	}
	w := warehouseOf(t, cr, 201)
	if w.Spec.Interval.Duration.String() != "5m0s" || w.Spec.FreightCreationPolicy != kargoapi.FreightCreationPolicyAutomatic ||
		w.Spec.Subscriptions[0].Image.DiscoveryLimit != 20 || w.Spec.Subscriptions[0].Image.ImageSelectionStrategy != kargoapi.ImageSelectionStrategySemVer {
		t.Errorf("Kargo's defaults not applied: %+v", w.Spec)
	}
	if w.Labels[kargoapi.LabelKeyShard] != "east" {
		t.Errorf("shard label %v", w.Labels)
	}
	ev := s.next(t, 15*time.Second)
	if ev.Type != "warehouse" || !strings.Contains(string(ev.Data), `"name":"w"`) {
		t.Errorf("stream event %s %s", ev.Type, ev.Data)
	}

	gr, err := srv.api.GetWarehouseWithResponse(ctx, ns, "w")
	if err != nil {
		t.Fatal(err)
	}
	// The same object, as created or newer: the Warehouse controller may
	// have written its status (a discovery that failed) in between.
	if got := warehouseOf(t, gr, 200); got.UID != w.UID || versionOf(t, got.ResourceVersion) < versionOf(t, w.ResourceVersion) {
		t.Errorf("get: uid %s version %s, want uid %s, version %s or newer", got.UID, got.ResourceVersion, w.UID, w.ResourceVersion)
	}
	lr, err := srv.api.ListWarehousesWithResponse(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if lr.JSON200 == nil || len(lr.JSON200.Items) != 1 || lr.JSON200.Items[0].Name != "w" {
		t.Errorf("list: %s", lr.Body)
	}

	noWait := false
	rr, err := srv.api.RefreshWarehouseWithResponse(ctx, ns, "w", &client.RefreshWarehouseParams{Wait: &noWait})
	if err != nil {
		t.Fatal(err)
	}
	if got := warehouseOf(t, rr, 200); got.Annotations[kargoapi.AnnotationKeyRefresh] == "" {
		t.Errorf("refresh: no annotation: %v", got.Annotations)
	}

	// A replace without the version it was made from is refused; with it,
	// the change is stored.
	pr, err := srv.api.ReplaceWarehouseWithBodyWithResponse(ctx, ns, "w", "application/json", strings.NewReader(warehouseDoc("w", "example.com/other")))
	if err != nil {
		t.Fatal(err)
	}
	if p := (stageReply{code: pr.StatusCode(), header: pr.HTTPResponse.Header, body: pr.Body}); !hasFieldError(p.problem(t, 400), "/metadata/resourceVersion", "Required value") {
		t.Errorf("replace without a version: %s", pr.Body)
	}
	// The controller writes the status meanwhile (its discovery of
	// example.com fails): a 409 is read again, as a client would.
	var pr2 *client.ReplaceWarehouseResponse
	for range 10 {
		cur := warehouseOf(t, mustGetWarehouse(t, ns, "w"), 200)
		cur.Spec.Subscriptions[0].Image.RepoURL = "example.com/other"
		if pr2, err = srv.api.ReplaceWarehouseWithResponse(ctx, ns, "w", cur); err != nil {
			t.Fatal(err)
		}
		if pr2.StatusCode() != 409 {
			break
		}
	}
	if got := warehouseOf(t, pr2, 200); got.Spec.Subscriptions[0].Image.RepoURL != "example.com/other" {
		t.Errorf("replace: %s", pr2.Body)
	}

	dr, err := srv.api.DeleteWarehouseWithResponse(ctx, ns, "w")
	if err != nil || dr.StatusCode() != 204 {
		t.Fatalf("delete: %v %v", err, dr)
	}
	if r := mustGetWarehouse(t, ns, "w"); r.StatusCode() != 404 {
		t.Errorf("get after delete: HTTP %d %s", r.StatusCode(), r.GetBody())
	}
}

func mustGetWarehouse(t testing.TB, ns, name string) *client.GetWarehouseResponse {
	t.Helper()
	ctx, cancel := stageCtx()
	defer cancel()
	r, err := srv.api.GetWarehouseWithResponse(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Kargo's webhook rules answer over REST as field errors with Kargo's
// messages, and through kubectl as the API server's 422; nothing is
// created.
func TestWarehouseInvalid(t *testing.T) {
	ns := stageProject()
	ctx, cancel := stageCtx()
	defer cancel()
	dup := `{"metadata":{"name":"dup"},"spec":{"subscriptions":[{"image":{"repoURL":"example.com/app"}},{"image":{"repoURL":"Example.com/app"}}]}}`
	r, err := srv.api.CreateWarehouseWithBodyWithResponse(ctx, ns, "application/json", strings.NewReader(dup))
	if err != nil {
		t.Fatal(err)
	}
	p := (stageReply{code: r.StatusCode(), header: r.HTTPResponse.Header, body: r.Body}).problem(t, 400)
	if !hasFieldError(p, "/spec/subscriptions/1/image", `subscription for image repository already exists at "spec.subscriptions[0].image"`) {
		t.Errorf("duplicate subscription: %s", r.Body)
	}

	k := newKubectl(t)
	yamlDoc := `apiVersion: kargo.akuity.io/v1alpha1
kind: Warehouse
metadata: {name: oci}
spec:
  subscriptions:
  - chart: {repoURL: "oci://example.com/charts/app", name: app}
`
	_, errs, ok := k.run(yamlDoc, "apply", "-n", ns, "-f", "-")
	if ok || !strings.Contains(errs, `spec.subscriptions[0].chart.name: Invalid value: "app": must be empty if repoURL starts with oci://`) {
		t.Errorf("kubectl apply of an invalid Warehouse: ok=%v %s", ok, errs)
	}
	if out := k.must("", "get", "warehouses", "-n", ns, "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("refused Warehouses exist: %s", out)
	}
}

// kubectl apply of a Warehouse as Kargo's docs write it; kubectl get
// shows Kargo's printer columns, REST sees it.
func TestWarehouseKubectl(t *testing.T) {
	ns := stageProject()
	k := newKubectl(t)
	doc := `apiVersion: kargo.akuity.io/v1alpha1
kind: Warehouse
metadata: {name: kargo-demo}
spec:
  shard: east
  subscriptions:
  - image:
      repoURL: public.ecr.aws/nginx/nginx
      semverConstraint: ^1.26.0
      discoveryLimit: 5
`
	if out := k.must(doc, "apply", "-n", ns, "-f", "-"); !strings.Contains(out, "warehouse.kargo.akuity.io/kargo-demo created") {
		t.Errorf("kubectl apply: %s", out)
	}
	table := k.must("", "get", "warehouses", "-n", ns)
	if !strings.Contains(table, "SHARD") || !strings.Contains(table, "kargo-demo") || !strings.Contains(table, "east") {
		t.Errorf("kubectl get warehouses:\n%s", table)
	}
	w := warehouseOf(t, mustGetWarehouse(t, ns, "kargo-demo"), 200)
	if w.Spec.Subscriptions[0].Image.SemverConstraint != "^1.26.0" || w.Labels[kargoapi.LabelKeyShard] != "east" {
		t.Errorf("REST shows %+v", w)
	}
}

// A Warehouse subscribed to an image repository of a registry the test
// serves in process: the controller discovers the tags and makes Freight
// of the newest; a newly pushed tag becomes new Freight, seen on the
// Freight list, after a refresh.
func TestWarehouseImageDiscovery(t *testing.T) {
	repo, push := imageRegistry(t)
	push("1.0.0")
	push("latest")
	ns := stageProject()
	ctx, cancel := stageCtx()
	defer cancel()
	doc := fmt.Sprintf(`{"metadata":{"name":"w"},"spec":{"subscriptions":[{"image":{"repoURL":%q,"semverConstraint":"^1.0.0"}}]}}`, repo)
	cr, err := srv.api.CreateWarehouseWithBodyWithResponse(ctx, ns, "application/json", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	warehouseOf(t, cr, 201)
	wantTag := func(tag string) kargoapi.Freight {
		t.Helper()
		var got kargoapi.Freight
		eventually(t, 30*time.Second, "Freight of "+tag, func() bool {
			r, err := srv.api.ListFreightWithResponse(ctx, ns, nil)
			if err != nil || r.JSON200 == nil || len(r.JSON200.Items) == 0 {
				return false
			}
			// Freight is listed newest first, to the second: two made in
			// one second may come in either order.
			for _, f := range r.JSON200.Items {
				if len(f.Images) == 1 && f.Images[0].Tag == tag {
					got = f
					return true
				}
			}
			return false
		})
		return got
	}
	f := wantTag("1.0.0")
	if f.Origin.Name != "w" || f.Images[0].RepoURL != repo || !strings.HasPrefix(f.Images[0].Digest, "sha256:") {
		t.Errorf("Freight %+v", f)
	}
	// The status is written after the Freight is made.
	eventually(t, 30*time.Second, "the Warehouse's status to name the Freight", func() bool {
		w := warehouseOf(t, mustGetWarehouse(t, ns, "w"), 200)
		return w.Status.LastFreightID == f.Name && w.Status.DiscoveredArtifacts != nil && len(w.Status.DiscoveredArtifacts.Images) == 1
	})

	push("1.1.0")
	t0 := time.Now()
	wait := true
	rr, err := srv.api.RefreshWarehouseWithResponse(ctx, ns, "w", &client.RefreshWarehouseParams{Wait: &wait})
	if err != nil {
		t.Fatal(err)
	}
	if got := warehouseOf(t, rr, 200); got.Status.LastFreightID == f.Name {
		t.Errorf("refresh handled without new Freight: %+v", got.Status)
	}
	wantTag("1.1.0")
	t.Logf("new tag pushed to Freight listed: %v", time.Since(t0))
}

// Kargo's Digest strategy follows what one tag (named, as Kargo names it,
// by semverConstraint, which Kargo's webhook still holds to be a semver
// constraint) points at: the tag pushed again is new Freight.
// With freightCreationPolicy Manual the Warehouse discovers the same and
// makes no Freight.
func TestWarehouseDigestAndManualPolicy(t *testing.T) {
	repo, push := imageRegistry(t)
	first := push("1.0.0")
	ns := stageProject()
	ctx, cancel := stageCtx()
	defer cancel()
	for _, w := range []struct{ name, policy string }{{"digest", "Automatic"}, {"manual", "Manual"}} {
		doc := fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"freightCreationPolicy":%q,"subscriptions":[{"image":{"repoURL":%q,"imageSelectionStrategy":"Digest","semverConstraint":"1.0.0"}}]}}`, w.name, w.policy, repo)
		cr, err := srv.api.CreateWarehouseWithBodyWithResponse(ctx, ns, "application/json", strings.NewReader(doc))
		if err != nil {
			t.Fatal(err)
		}
		warehouseOf(t, cr, 201)
	}
	discovered := func(w, digest string) {
		t.Helper()
		wait := true
		eventually(t, 30*time.Second, w+" to discover "+digest, func() bool {
			rr, err := srv.api.RefreshWarehouseWithResponse(ctx, ns, w, &client.RefreshWarehouseParams{Wait: &wait})
			if err != nil || rr.StatusCode() != 200 {
				return false
			}
			a := warehouseOf(t, rr, 200).Status.DiscoveredArtifacts
			return a != nil && len(a.Images) == 1 && len(a.Images[0].References) == 1 &&
				a.Images[0].References[0].Tag == "1.0.0" && a.Images[0].References[0].Digest == digest
		})
	}
	freightOf := func(origin string) []string {
		t.Helper()
		r, err := srv.api.ListFreightWithResponse(ctx, ns, nil)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("list Freight: %v %v", err, r)
		}
		var digests []string
		for _, f := range r.JSON200.Items {
			if f.Origin.Name == origin && len(f.Images) == 1 {
				digests = append(digests, f.Images[0].Digest)
			}
		}
		slices.Sort(digests)
		return digests
	}
	discovered("digest", first)
	discovered("manual", first)
	second := push("1.0.0")
	discovered("digest", second)
	discovered("manual", second)
	want := []string{first, second}
	slices.Sort(want)
	if got := freightOf("digest"); !slices.Equal(got, want) {
		t.Errorf("the Digest Warehouse's Freight: %v, want one per digest %v", got, want)
	}
	if got := freightOf("manual"); len(got) != 0 {
		t.Errorf("the Manual Warehouse made Freight: %v", got)
	}
}

// imageRegistry serves an image registry in process (go-containerregistry's,
// over HTTP on loopback) for the test, with one repository: push makes a
// random image, tags it and returns its digest.
func imageRegistry(t *testing.T) (repo string, push func(tag string) string) {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	repo = strings.TrimPrefix(reg.URL, "http://") + "/app"
	return repo, func(tag string) string {
		t.Helper()
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d.String()
	}
}

// versionOf is a resource version as a number: etcd's revisions rise
// across the store.
func versionOf(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("resource version %q: %v", rv, err)
	}
	return n
}
