package v1alpha1

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Warehouse decoded from JSON without some fields gets the CRD's
// defaults for them, as the API server would give: interval,
// freightCreationPolicy and strictSemvers are written even when zero (no
// omitempty, as in Kargo), so a body that leaves them out would otherwise
// send "0s", "" (refused by the enum) and false (turning off a default
// that guards against mistaking short commit hashes for versions).

// DefaultWarehouseInterval is the CRD's default spec.interval.
const DefaultWarehouseInterval = 5 * time.Minute

// UnmarshalJSON decodes a spec over the CRD's defaults.
func (s *WarehouseSpec) UnmarshalJSON(b []byte) error {
	type plain WarehouseSpec
	p := plain{Interval: metav1.Duration{Duration: DefaultWarehouseInterval}, FreightCreationPolicy: FreightCreationPolicyAutomatic}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if p.FreightCreationPolicy == "" {
		// What a Go client of these types sends for "not set" (the field
		// has no omitempty): the default, as an absent field gets.
		p.FreightCreationPolicy = FreightCreationPolicyAutomatic
	}
	*s = WarehouseSpec(p)
	return nil
}

// UnmarshalJSON decodes a subscription over the CRD's defaults.
func (s *GitSubscription) UnmarshalJSON(b []byte) error {
	type plain GitSubscription
	p := plain{StrictSemvers: true}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = GitSubscription(p)
	return nil
}

// UnmarshalJSON decodes a subscription over the CRD's defaults.
func (s *ImageSubscription) UnmarshalJSON(b []byte) error {
	type plain ImageSubscription
	p := plain{StrictSemvers: true}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = ImageSubscription(p)
	return nil
}
