package resources

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
)

func webTemplate(name, namespace, kind string) *rolloutsapi.ClusterAnalysisTemplate {
	return &rolloutsapi.ClusterAnalysisTemplate{
		TypeMeta:   metav1.TypeMeta{Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: rolloutsapi.AnalysisTemplateSpec{Metrics: []rolloutsapi.Metric{{Name: "m",
			Provider: rolloutsapi.MetricProvider{Web: &rolloutsapi.WebMetric{URL: "http://x"}}}}},
	}
}

// What prepare asks of a body before Rollouts' rules, for a
// cluster-scoped kind and a namespaced one.
func TestPrepare(t *testing.T) {
	validate := func(*rolloutsapi.ClusterAnalysisTemplate) field.ErrorList { return nil }
	cluster := &Objects[*rolloutsapi.ClusterAnalysisTemplate]{kind: kind[*rolloutsapi.ClusterAnalysisTemplate]{
		name: "ClusterAnalysisTemplate", cluster: true, validate: validate}}
	// The same type as a namespaced kind: prepare goes by the kind's scope.
	namespaced := &Objects[*rolloutsapi.ClusterAnalysisTemplate]{kind: kind[*rolloutsapi.ClusterAnalysisTemplate]{
		name: "ClusterAnalysisTemplate", validate: validate}}
	for _, c := range []struct {
		name          string
		objects       *Objects[*rolloutsapi.ClusterAnalysisTemplate]
		project, path string
		body          *rolloutsapi.ClusterAnalysisTemplate
		err, ns       string
	}{
		{"cluster-scoped: the namespace is dropped", cluster, "", "", webTemplate("t", "demo", ""), "", ""},
		{"another kind", cluster, "", "", webTemplate("t", "", "AnalysisTemplate"), `kind: Unsupported value: "AnalysisTemplate"`, ""},
		{"no name", cluster, "", "", webTemplate("", "", ""), "metadata.name: Required value", ""},
		{"the path's name", cluster, "", "u", webTemplate("t", "", ""), `must be the ClusterAnalysisTemplate's name in the path, "u"`, ""},
		{"namespaced: the project's namespace", namespaced, "demo", "", webTemplate("t", "", ""), "", "demo"},
		{"namespaced: another namespace", namespaced, "demo", "", webTemplate("t", "prod", ""), `must be the project "demo"`, "prod"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.objects.prepare(c.project, c.path, c.body)
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want %q", err, c.err)
			}
			if c.body.Namespace != c.ns {
				t.Errorf("namespace %q, want %q", c.body.Namespace, c.ns)
			}
		})
	}
}
