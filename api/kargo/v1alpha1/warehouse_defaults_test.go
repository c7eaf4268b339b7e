package v1alpha1

import (
	"encoding/json"
	"testing"
)

// Fields left out of a body get the CRD's defaults; given ones are kept.
func TestWarehouseJSONDefaults(t *testing.T) {
	var w Warehouse
	if err := json.Unmarshal([]byte(`{"spec":{"subscriptions":[{"git":{"repoURL":"https://h/r"}},{"image":{"repoURL":"h/i","strictSemvers":false}}]}}`), &w); err != nil {
		t.Fatal(err)
	}
	s := w.Spec
	if s.Interval.Duration != DefaultWarehouseInterval || s.FreightCreationPolicy != FreightCreationPolicyAutomatic {
		t.Errorf("spec defaults: %+v", s)
	}
	if !s.Subscriptions[0].Git.StrictSemvers || s.Subscriptions[1].Image.StrictSemvers {
		t.Errorf("strictSemvers: git %v (want true), image %v (want false, given)", s.Subscriptions[0].Git.StrictSemvers, s.Subscriptions[1].Image.StrictSemvers)
	}
}

// A Go client of these types sends an unset policy as "": it is the
// default, as an absent one is.
func TestEmptyFreightCreationPolicyIsTheDefault(t *testing.T) {
	var w Warehouse
	if err := json.Unmarshal([]byte(`{"spec":{"freightCreationPolicy":"","subscriptions":[{"image":{"repoURL":"h/i"}}]}}`), &w); err != nil {
		t.Fatal(err)
	}
	if w.Spec.FreightCreationPolicy != FreightCreationPolicyAutomatic {
		t.Errorf("policy %q, want Automatic", w.Spec.FreightCreationPolicy)
	}
}
