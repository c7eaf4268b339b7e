package rules

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

func TestDefaultStage(t *testing.T) {
	cases := []struct {
		name        string
		shard       string
		labels      map[string]string
		want        map[string]string
		wantChanged bool
	}{
		{name: "shard sets the label", shard: "east", want: map[string]string{kargoapi.LabelKeyShard: "east"}, wantChanged: true},
		{
			name: "shard overwrites a different label, keeps others", shard: "east",
			labels:      map[string]string{kargoapi.LabelKeyShard: "west", "team": "blue"},
			want:        map[string]string{kargoapi.LabelKeyShard: "east", "team": "blue"},
			wantChanged: true,
		},
		{name: "label already right", shard: "east", labels: map[string]string{kargoapi.LabelKeyShard: "east"}, want: map[string]string{kargoapi.LabelKeyShard: "east"}},
		{
			name: "no shard removes the label", labels: map[string]string{kargoapi.LabelKeyShard: "west", "team": "blue"},
			want: map[string]string{"team": "blue"}, wantChanged: true,
		},
		{name: "no shard, no label", labels: map[string]string{"team": "blue"}, want: map[string]string{"team": "blue"}},
		{name: "no shard, no labels at all"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &kargoapi.Stage{ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(tc.labels)}, Spec: kargoapi.StageSpec{Shard: tc.shard}}
			if changed := DefaultStage(s); changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if !maps.Equal(s.Labels, tc.want) {
				t.Errorf("labels = %v, want %v", s.Labels, tc.want)
			}
		})
	}
}
