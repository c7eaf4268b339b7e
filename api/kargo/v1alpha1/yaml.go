package v1alpha1

import (
	"fmt"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// Kargo's objects decode from YAML by their JSON names, as Kubernetes
// decodes YAML, also where a YAML library that reads its own tags does
// the decoding: the generated Go client reads an application/yaml
// response (Accept: application/yaml) with go.yaml.in/yaml, which would
// otherwise leave every camel-cased field empty.

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Stage) UnmarshalYAML(n *yaml.Node) error { return viaJSON(n, (*stageNoYAML)(s)) }

// UnmarshalYAML implements yaml.Unmarshaler.
func (f *Freight) UnmarshalYAML(n *yaml.Node) error { return viaJSON(n, (*freightNoYAML)(f)) }

// UnmarshalYAML implements yaml.Unmarshaler.
func (p *Promotion) UnmarshalYAML(n *yaml.Node) error { return viaJSON(n, (*promotionNoYAML)(p)) }

// UnmarshalYAML implements yaml.Unmarshaler. A Warehouse decodes from
// JSON with the CRD's defaults (warehouse_defaults.go), and so from YAML.
func (w *Warehouse) UnmarshalYAML(n *yaml.Node) error {
	raw, err := yaml.Marshal(n)
	if err != nil {
		return fmt.Errorf("re-encode YAML: %w", err)
	}
	return sigsyaml.Unmarshal(raw, w)
}

// The same types without the method, so that decoding them is not a
// loop.

// +kubebuilder:object:generate=false
type stageNoYAML Stage

// +kubebuilder:object:generate=false
type freightNoYAML Freight

// +kubebuilder:object:generate=false
type promotionNoYAML Promotion

// viaJSON decodes the node as Kubernetes decodes YAML: to JSON, then by
// the JSON names.
func viaJSON(n *yaml.Node, into any) error {
	raw, err := yaml.Marshal(n)
	if err != nil {
		return fmt.Errorf("re-encode YAML: %w", err)
	}
	return sigsyaml.Unmarshal(raw, into)
}
