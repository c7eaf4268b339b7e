package v1alpha1

// The template kinds (Rollouts v1.10.2 pkg/apis/rollouts/v1alpha1,
// analysis_types.go and types.go): an AnalysisTemplate in a namespace, a
// ClusterAnalysisTemplate for every namespace, both of the same spec.

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +genclient
// +kubebuilder:object:root=true

// AnalysisTemplate holds the template for performing canary analysis
type AnalysisTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AnalysisTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// AnalysisTemplateList is a list of AnalysisTemplate resources
type AnalysisTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []AnalysisTemplate `json:"items"`
}

// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true

// ClusterAnalysisTemplate holds the template for performing canary analysis
type ClusterAnalysisTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AnalysisTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// ClusterAnalysisTemplateList is a list of ClusterAnalysisTemplate resources
type ClusterAnalysisTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []ClusterAnalysisTemplate `json:"items"`
}

// AnalysisTemplateSpec is the specification for a AnalysisTemplate resource
type AnalysisTemplateSpec struct {
	// Metrics contains the list of metrics to query as part of an analysis run
	Metrics []Metric `json:"metrics,omitempty"`
	// Args are the list of arguments to the template
	// +optional
	Args []Argument `json:"args,omitempty"`
	// DryRun object contains the settings for running the analysis in Dry-Run mode
	// +optional
	DryRun []DryRun `json:"dryRun,omitempty"`
	// MeasurementRetention object contains the settings for retaining the number of measurements during the analysis
	// +optional
	MeasurementRetention []MeasurementRetention `json:"measurementRetention,omitempty"`
	// Templates reference to a list of analysis templates to combine with the rest of the metrics for an AnalysisRun
	Templates []AnalysisTemplateRef `json:"templates,omitempty"`
}

// AnalysisTemplateRef names a template whose metrics, args, dry-run and
// retention settings are merged into another's.
type AnalysisTemplateRef struct {
	// TemplateName name of template to use in AnalysisRun
	// +optional
	TemplateName string `json:"templateName"`
	// Whether to look for the templateName at cluster scope or namespace scope
	// +optional
	ClusterScope *bool `json:"clusterScope,omitempty"`
}

// IsClusterScope returns true if the template should be looked up at cluster scope.
// Defaults to false (namespace scope) if ClusterScope is nil.
func (ref *AnalysisTemplateRef) IsClusterScope() bool {
	return ref.ClusterScope != nil && *ref.ClusterScope
}
