package auth

import (
	"context"
	"errors"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A cluster user's request is reviewed in the namespace its resource is
// in: an action's from the namespace template, a Kargo or Rollouts
// object's project, and none for a cluster-scoped object
// (ClusterAnalysisTemplates), whose refusal says so.
func TestClusterReviewNamespace(t *testing.T) {
	k := fake.NewClientset()
	var asked []string
	k.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		asked = append(asked, sar.Spec.ResourceAttributes.Namespace)
		return true, sar, nil // not allowed
	})
	c := NewCluster(func(project, domain string) string { return project + "-" + domain })
	c.SetClient(k)
	s := &Subject{Name: "alice", Cluster: true}
	for _, a := range []Attributes{
		{Verb: VerbRead, Project: "demo", Domain: "dev", Kube: KubeAttributes{Group: "flyte.org", Resource: "taskactions", Verb: "get"}},
		{Verb: VerbRead, Project: "demo", Kube: KubeAttributes{Group: "argoproj.io", Resource: "analysisruns", Verb: "get"}},
		{Verb: VerbRead, Project: Any, Domain: Any, Kube: KubeAttributes{Group: "argoproj.io", Resource: "clusteranalysistemplates", Verb: "list"}},
	} {
		err := c.Authorize(context.Background(), s, a)
		if !errors.Is(err, ErrForbidden) {
			t.Fatalf("%+v: %v, want a refusal", a, err)
		}
		if a.Project == Any && err.Error() != "alice may not list clusteranalysistemplates.argoproj.io, which belong to no project: that takes a grant of every project and domain, or a ClusterRole" {
			t.Errorf("refusal: %v", err)
		}
	}
	if want := []string{"demo-dev", "demo", ""}; len(asked) != 3 || asked[0] != want[0] || asked[1] != want[1] || asked[2] != want[2] {
		t.Errorf("reviewed in %q, want %q", asked, want)
	}
}
