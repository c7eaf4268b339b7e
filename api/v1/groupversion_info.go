package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the API group and version of TaskAction. The
// generated clientset refers to it by this name.
var SchemeGroupVersion = schema.GroupVersion{Group: "flyte.org", Version: "v1"}

// Plural is the resource name in REST paths.
const Plural = "taskactions"

// Resource qualifies a resource name with the group (for API errors and
// the generated listers).
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers the TaskAction types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the TaskAction types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &TaskAction{}, &TaskActionList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
