package webhooks

import (
	"testing"

	"k8s.io/apiserver/pkg/admission"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

const warehouseDoc = `
apiVersion: kargo.akuity.io/v1alpha1
kind: Warehouse
metadata: {name: w}
spec:
  shard: east
  subscriptions:
  - image: {repoURL: example.com/app}
  - image: {repoURL: Example.com/app}
`

// A Warehouse write gets the shard label and Kargo's error on a
// repository subscribed to twice.
func TestWarehouse(t *testing.T) {
	u := object(t, warehouseDoc)
	a := NewAdmission()
	if err := a.Admit(t.Context(), request(u, nil, kargoapi.WarehousePlural, "", admission.Create), nil); err != nil {
		t.Fatal(err)
	}
	if got := u.GetLabels()[kargoapi.LabelKeyShard]; got != "east" {
		t.Errorf("shard label %q, want east", got)
	}
	err := a.Validate(t.Context(), request(u, nil, kargoapi.WarehousePlural, "", admission.Create), nil)
	checkInvalid(t, err, "Warehouse",
		`spec.subscriptions[1].image: Invalid value: "Example.com/app": subscription for image repository already exists at "spec.subscriptions[0].image"`)
}
