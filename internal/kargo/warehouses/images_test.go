package warehouses

import (
	"slices"
	"testing"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

func TestSelectTags(t *testing.T) {
	tags := []string{"1.0.0", "v1.2.0", "1.10.0", "2.0.0-rc.1", "1.2", "latest", "abc1234", "2024-01-02", "2024-03-01"}
	tests := []struct {
		name string
		sub  kargoapi.ImageSubscription
		want []string
	}{
		{"semver strict", kargoapi.ImageSubscription{StrictSemvers: true},
			[]string{"2.0.0-rc.1", "1.10.0", "v1.2.0", "1.0.0"}},
		{"semver constraint", kargoapi.ImageSubscription{StrictSemvers: true, SemverConstraint: "^1.0.0"},
			[]string{"1.10.0", "v1.2.0", "1.0.0"}},
		{"semver loose", kargoapi.ImageSubscription{SemverConstraint: "~1.2"},
			[]string{"v1.2.0", "1.2"}},
		{"semver limit and ignore", kargoapi.ImageSubscription{StrictSemvers: true, DiscoveryLimit: 2, IgnoreTags: []string{"2.0.0-rc.1"}},
			[]string{"1.10.0", "v1.2.0"}},
		{"lexical allow", kargoapi.ImageSubscription{ImageSelectionStrategy: kargoapi.ImageSelectionStrategyLexical, AllowTags: `^\d{4}-`},
			[]string{"2024-03-01", "2024-01-02"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := selectTags(tt.sub, tags)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
