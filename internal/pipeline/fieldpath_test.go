package pipeline

import (
	"slices"
	"testing"
)

func TestFieldPath(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"spec", []string{"spec"}},
		{"spec.promotionTemplate.spec.steps[1].as", []string{"spec", "promotionTemplate", "spec", "steps", "1", "as"}},
		{"spec.requestedFreight[0].sources.requiredSoakTime", []string{"spec", "requestedFreight", "0", "sources", "requiredSoakTime"}},
		{"metadata.labels[kargo.akuity.io/shard]", []string{"metadata", "labels", "kargo.akuity.io/shard"}},
		{"items[2][3].name", []string{"items", "2", "3", "name"}},
		{"", nil},
		{"<nil>", nil},
	} {
		if got := FieldPath(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("FieldPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
