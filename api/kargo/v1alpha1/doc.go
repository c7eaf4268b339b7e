// Package v1alpha1 holds Kargo's Stage, Promotion, Freight, Warehouse and
// ProjectConfig custom resources (kargo.akuity.io/v1alpha1) and the types
// their schemas reference.
//
// Kargo's Go API module is not on the module proxy, so the types are
// defined here. They follow Kargo v1.6.3 field for field (JSON names,
// kubebuilder validation markers and doc comments, which become the CRD's
// descriptions), so that controller-gen generates the same Stage CRD as
// Kargo's and objects written by Kargo read back unchanged. Fields added
// after v1.6.3 (spec.requestedFreight[].sources.autoPromotionOptions,
// status.autoPromotionEnabled, status.metadata) are deliberately absent.
//
// +kubebuilder:object:generate=true
// +groupName=kargo.akuity.io
// +groupGoName=Kargo
package v1alpha1
