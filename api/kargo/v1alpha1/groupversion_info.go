package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is Kargo's API group.
const GroupName = "kargo.akuity.io"

// SchemeGroupVersion is the API group and version of Stage, Promotion,
// Freight, Warehouse and ProjectConfig. The generated clientset refers to
// it by this name.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// GroupVersion is SchemeGroupVersion under the name Kargo's code uses.
var GroupVersion = SchemeGroupVersion

// StagePlural is the Stage resource name in REST paths.
const StagePlural = "stages"

// PromotionPlural is the Promotion resource name in REST paths.
const PromotionPlural = "promotions"

// Resource qualifies a resource name with the group (for API errors and
// the generated listers).
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers the Kargo types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the Kargo types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&Stage{}, &StageList{},
		&Promotion{}, &PromotionList{},
		&Freight{}, &FreightList{},
		&Warehouse{}, &WarehouseList{},
		&ProjectConfig{}, &ProjectConfigList{},
	)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
