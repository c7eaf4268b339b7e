package rules

import (
	"strings"
	"testing"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

func TestValidateWarehouse(t *testing.T) {
	git := func(url string) kargoapi.RepoSubscription {
		return kargoapi.RepoSubscription{Git: &kargoapi.GitSubscription{RepoURL: url}}
	}
	tests := []struct {
		name string
		subs []kargoapi.RepoSubscription
		want []string // "field: message" of each error, in order
	}{
		{"valid", []kargoapi.RepoSubscription{git("https://h/r.git"),
			{Image: &kargoapi.ImageSubscription{RepoURL: "h/i", SemverConstraint: "^1.0.0", Platform: "linux/amd64"}},
			{Chart: &kargoapi.ChartSubscription{RepoURL: "https://h/charts", Name: "c"}}}, nil},
		{"neither", []kargoapi.RepoSubscription{{}},
			[]string{"spec.subscriptions[0]: Invalid value: {}: exactly one of spec.subscriptions[0].git, spec.subscriptions[0].image, or spec.subscriptions[0].chart must be non-empty"}},
		{"duplicate git", []kargoapi.RepoSubscription{git("https://h/r.git"), git("https://H/r/")},
			[]string{`spec.subscriptions[1].git: Invalid value: "https://H/r/": subscription for Git repository already exists at "spec.subscriptions[0].git"`}},
		{"bad constraint and platform", []kargoapi.RepoSubscription{
			{Image: &kargoapi.ImageSubscription{RepoURL: "h/i", SemverConstraint: "nope", Platform: "linux"}}},
			[]string{`spec.subscriptions[0].image.semverConstraint: Invalid value: "nope"`, `spec.subscriptions[0].image.platform: Invalid value: "linux"`}},
		{"chart names", []kargoapi.RepoSubscription{
			{Chart: &kargoapi.ChartSubscription{RepoURL: "oci://h/c", Name: "c"}},
			{Chart: &kargoapi.ChartSubscription{RepoURL: "https://h/charts"}}},
			[]string{`spec.subscriptions[0].chart.name: Invalid value: "c": must be empty if repoURL starts with oci://`,
				`spec.subscriptions[1].chart.name: Invalid value: "": must be non-empty if repoURL starts with http:// or https://`}},
		{"duplicate chart", []kargoapi.RepoSubscription{
			{Chart: &kargoapi.ChartSubscription{RepoURL: "https://h/charts", Name: "c"}},
			{Chart: &kargoapi.ChartSubscription{RepoURL: "https://h/charts", Name: "c"}}},
			[]string{`spec.subscriptions[1].chart: Invalid value: "https://h/charts": subscription for chart "c" already exists at "spec.subscriptions[0].chart"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateWarehouse(&kargoapi.Warehouse{Spec: kargoapi.WarehouseSpec{Subscriptions: tt.subs}})
			var got []string
			for _, e := range errs {
				got = append(got, strings.TrimSuffix(e.Error(), ": "))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestDefaultWarehouse(t *testing.T) {
	w := &kargoapi.Warehouse{Spec: kargoapi.WarehouseSpec{Shard: "a"}}
	if !DefaultWarehouse(w) || w.Labels[kargoapi.LabelKeyShard] != "a" || DefaultWarehouse(w) {
		t.Fatalf("shard label not set once: %v", w.Labels)
	}
	w.Spec.Shard = ""
	if !DefaultWarehouse(w) || len(w.Labels) != 0 {
		t.Fatalf("shard label not removed: %v", w.Labels)
	}
}
