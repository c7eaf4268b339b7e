package v1alpha1

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

// go.yaml.in/yaml (the generated Go client's YAML decoder) reads Kargo's
// objects by their JSON names, Warehouse defaults included.
func TestDecodeWithGoYAML(t *testing.T) {
	var s Stage
	if err := yaml.Unmarshal([]byte("metadata: {name: test, resourceVersion: \"7\"}\nspec: {shard: a}\n"), &s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "test" || s.ResourceVersion != "7" || s.Spec.Shard != "a" {
		t.Errorf("Stage %+v %+v", s.ObjectMeta, s.Spec)
	}
	var w Warehouse
	if err := yaml.Unmarshal([]byte("metadata: {name: w}\nspec: {subscriptions: [{image: {repoURL: h/i}}]}\n"), &w); err != nil {
		t.Fatal(err)
	}
	if w.Name != "w" || w.Spec.FreightCreationPolicy != FreightCreationPolicyAutomatic || !w.Spec.Subscriptions[0].Image.StrictSemvers {
		t.Errorf("Warehouse %+v", w.Spec)
	}
}
