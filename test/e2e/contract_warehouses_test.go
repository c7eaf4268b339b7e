package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

// contractWarehouses creates, reads, replaces, refreshes, streams and
// deletes a Warehouse. Its registry is not reachable from here: the
// controller's discovery fails, which the walk does not depend on.
func contractWarehouses(t *testing.T, ctx context.Context, c *client.ClientWithResponses) {
	k := fmt.Sprintf("contractw%d", seq.Add(1))
	w := kargoapi.Warehouse{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: kargoapi.WarehouseSpec{
		Subscriptions: []kargoapi.RepoSubscription{{Image: &kargoapi.ImageSubscription{RepoURL: "registry.invalid/app"}}},
	}}
	cw, err := c.CreateWarehouseWithResponse(ctx, k, w)
	want(t, cw, err, http.StatusCreated)
	if decoded(t, cw.JSON201).Spec.FreightCreationPolicy != kargoapi.FreightCreationPolicyAutomatic {
		t.Errorf("Kargo's default policy not applied: %+v", cw.JSON201.Spec)
	}
	lw, err := c.ListWarehousesWithResponse(ctx, k)
	want(t, lw, err, http.StatusOK)
	if n := len(decoded(t, lw.JSON200).Items); n != 1 {
		t.Errorf("%d Warehouses, want 1", n)
	}
	// The controller writes the status too: a 409 is read again, as the
	// document says.
	for tries := 1; ; tries++ {
		gw, err := c.GetWarehouseWithResponse(ctx, k, "w")
		want(t, gw, err, http.StatusOK)
		next := *decoded(t, gw.JSON200)
		next.Spec.Shard = "a"
		rw, err := c.ReplaceWarehouseWithResponse(ctx, k, "w", next)
		if err == nil && rw.StatusCode() == http.StatusConflict && tries < 10 {
			continue
		}
		want(t, rw, err, http.StatusOK)
		if decoded(t, rw.JSON200).Spec.Shard != "a" {
			t.Errorf("replace: shard %q", rw.JSON200.Spec.Shard)
		}
		break
	}
	noWait := false
	fw, err := c.RefreshWarehouseWithResponse(ctx, k, "w", &client.RefreshWarehouseParams{Wait: &noWait})
	want(t, fw, err, http.StatusOK)
	if decoded(t, fw.JSON200).Annotations[kargoapi.AnnotationKeyRefresh] == "" {
		t.Errorf("refresh: no annotation: %v", fw.JSON200.Annotations)
	}
	s, err := c.StreamProjectWarehouses(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if items := untilSynced(t, ctx, s); len(items) != 1 || items[0].Metadata == nil || items[0].Metadata.Name == nil || *items[0].Metadata.Name != "w" {
		t.Errorf("the Warehouses' snapshot: %v", items)
	}
	dw, err := c.DeleteWarehouseWithResponse(ctx, k, "w")
	want(t, dw, err, http.StatusNoContent)
}
