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
func (s *Stage) UnmarshalYAML(n *yaml.Node) error { return viaJSON(n, s) }

// UnmarshalYAML implements yaml.Unmarshaler.
func (f *Freight) UnmarshalYAML(n *yaml.Node) error { return viaJSON(n, f) }

// UnmarshalYAML implements yaml.Unmarshaler.
func (p *Promotion) UnmarshalYAML(n *yaml.Node) error { return viaJSON(n, p) }

// UnmarshalYAML implements yaml.Unmarshaler; a Warehouse gets the CRD's
// defaults (warehouse_defaults.go) as from JSON.
func (w *Warehouse) UnmarshalYAML(n *yaml.Node) error { return viaJSON(n, w) }

// viaJSON decodes the node as Kubernetes decodes YAML: to JSON, then by
// the JSON names. sigs.k8s.io/yaml never calls go.yaml.in's Unmarshaler,
// so this is no loop.
func viaJSON(n *yaml.Node, into any) error {
	raw, err := yaml.Marshal(n)
	if err != nil {
		return fmt.Errorf("re-encode YAML: %w", err)
	}
	return sigsyaml.Unmarshal(raw, into)
}
