// Package v1alpha1 holds Argo Rollouts' AnalysisTemplate,
// ClusterAnalysisTemplate and AnalysisRun (argoproj.io/v1alpha1) and the
// types their specs and statuses reference.
//
// The types are ported from Argo Rollouts v1.10.2
// (pkg/apis/rollouts/v1alpha1/analysis_types.go), not imported: the
// module's dependencies would pull other Kubernetes versions into ours.
// JSON names are Rollouts' field for field, so objects written by Rollouts
// read back unchanged. The metric providers this server runs or will run
// (web, job, prometheus) are typed in full; the others are kept as raw
// JSON (apiextensionsv1.JSON), which round-trips whatever Rollouts' CRD
// admits without this package knowing its shape (see MetricProvider).
//
// The CRDs are not generated from these types: config/crd holds Rollouts'
// own, copied verbatim, so the package carries +kubebuilder:skip, which
// keeps controller-gen's CRD generator out of it (its deepcopy generator
// still runs).
//
// +kubebuilder:skip
// +kubebuilder:object:generate=true
// +groupName=argoproj.io
// +groupGoName=Argoproj
package v1alpha1
