package v1alpha1

// Annotation keys Kargo reads and writes on Stages (Kargo
// api/v1alpha1/annotations.go).
const (
	// AnnotationKeyRefresh requests a reconciliation. Its value, usually a
	// timestamp, is copied into status.lastHandledRefresh once handled.
	AnnotationKeyRefresh = "kargo.akuity.io/refresh"
	// AnnotationKeyReverify requests re-verification of the current Freight:
	// a VerificationRequest as JSON, or a bare VerificationInfo ID.
	AnnotationKeyReverify = "kargo.akuity.io/reverify"
	// AnnotationKeyAbort requests that the current verification be aborted
	// (on a Stage) or that a Promotion be aborted (on a Promotion).
	AnnotationKeyAbort = "kargo.akuity.io/abort"
	// AnnotationKeyPromotion names, on an AnalysisRun, the Promotion whose
	// Freight it verifies.
	AnnotationKeyPromotion = "kargo.akuity.io/promotion"
	// AnnotationKeyCreateActor names who created the object.
	AnnotationKeyCreateActor = "kargo.akuity.io/create-actor"
	// AnnotationKeyDescription is a human-readable description.
	AnnotationKeyDescription = "kargo.akuity.io/description"
	// AnnotationKeyArgoCDContext is the JSON list of Argo CD Applications the
	// last Promotion updated.
	AnnotationKeyArgoCDContext = "kargo.akuity.io/argocd-context"
	// AnnotationKeyColor is the Stage's color in Kargo's UI.
	AnnotationKeyColor = "kargo.akuity.io/color"
)
