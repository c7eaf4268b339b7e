package freight

import (
	"errors"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/pipeline"
)

var warehouse = kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: "w"}

func freight(name string) *kargoapi.Freight {
	return &kargoapi.Freight{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "p"},
		Origin:     warehouse,
		Images:     []kargoapi.Image{{RepoURL: "example.com/app", Tag: name, Digest: "sha256:" + name}},
	}
}

func TestAvailable(t *testing.T) {
	direct := &kargoapi.Stage{ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: "p"},
		Spec: kargoapi.StageSpec{RequestedFreight: []kargoapi.FreightRequest{
			{Origin: warehouse, Sources: kargoapi.FreightSources{Direct: true}}}}}
	downstream := &kargoapi.Stage{ObjectMeta: metav1.ObjectMeta{Name: "uat", Namespace: "p"},
		Spec: kargoapi.StageSpec{RequestedFreight: []kargoapi.FreightRequest{
			{Origin: warehouse, Sources: kargoapi.FreightSources{Stages: []string{"dev"}}}}}}
	verified, approved, other, fresh := freight("verified"), freight("approved"), freight("other"), freight("fresh")
	verified.Status.AddVerifiedStage("dev", time.Now())
	approved.Status.AddApprovedStage("uat", time.Now())
	other.Origin.Name = "elsewhere"
	all := []*View{{Object: verified}, {Object: approved}, {Object: other}, {Object: fresh}}

	names := func(vs []*View) (out []string) {
		for _, v := range vs {
			out = append(out, v.Object.Name)
		}
		return out
	}
	if got, want := names(available(all, direct)), []string{"verified", "approved", "fresh"}; !reflect.DeepEqual(got, want) {
		t.Errorf("available to a Stage taking its origin directly: %v, want %v (newest-first order kept)", got, want)
	}
	if got, want := names(available(all, downstream)), []string{"verified", "approved"}; !reflect.DeepEqual(got, want) {
		t.Errorf("available downstream: %v, want verified upstream or approved: %v", got, want)
	}
}

func TestNotFound(t *testing.T) {
	tests := []struct {
		name, alias string
		want        string
	}{
		{"abc", "", `freight "abc" not found in namespace "p"`},
		{"", "frosty-fox", `freight with alias "frosty-fox" not found in namespace "p"`},
	}
	for _, tc := range tests {
		err := notFound("p", tc.name, tc.alias)
		if !errors.Is(err, pipeline.ErrNotFound) || err.Error() != tc.want {
			t.Errorf("notFound(%q, %q) = %v, want ErrNotFound %q", tc.name, tc.alias, err, tc.want)
		}
	}
}
