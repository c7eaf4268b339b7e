package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is Argo's API group.
const GroupName = "argoproj.io"

// SchemeGroupVersion is the API group and version of the analysis kinds.
// The generated clientset refers to it by this name.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// GroupVersion is SchemeGroupVersion under a shorter name.
var GroupVersion = SchemeGroupVersion

// The resource names in REST paths.
const (
	AnalysisTemplatePlural        = "analysistemplates"
	ClusterAnalysisTemplatePlural = "clusteranalysistemplates"
	AnalysisRunPlural             = "analysisruns"
)

// Resource qualifies a resource name with the group (for API errors and
// the generated listers).
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers the analysis types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the analysis types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&AnalysisTemplate{}, &AnalysisTemplateList{},
		&ClusterAnalysisTemplate{}, &ClusterAnalysisTemplateList{},
		&AnalysisRun{}, &AnalysisRunList{},
	)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
