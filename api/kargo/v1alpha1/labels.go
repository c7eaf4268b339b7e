package v1alpha1

// Label keys and the finalizer Kargo uses (Kargo api/v1alpha1/labels.go).
const (
	// LabelKeyShard assigns a Stage to a controller shard. The defaulting
	// webhook keeps it equal to spec.shard.
	LabelKeyShard = "kargo.akuity.io/shard"
	// LabelKeyProject marks a namespace as a Kargo project (value "true").
	LabelKeyProject = "kargo.akuity.io/project"
	// LabelKeyAlias is a Freight's alias (kept equal to Freight.alias by
	// the Freight defaulting webhook).
	LabelKeyAlias = "kargo.akuity.io/alias"
	// LabelKeyFreight names a piece of Freight on objects that refer to one.
	LabelKeyFreight = "kargo.akuity.io/freight"
	// LabelKeyStage names a Stage on objects that refer to one.
	LabelKeyStage = "kargo.akuity.io/stage"
	// LabelKeyFreightCollection names the Freight collection (its ID) an
	// AnalysisRun verifies.
	LabelKeyFreightCollection = "kargo.akuity.io/freight-collection"

	// LabelValueTrue is the value of boolean labels.
	LabelValueTrue = "true"

	// FinalizerName is the finalizer the Stage controller puts on Stages.
	FinalizerName = "kargo.akuity.io/finalizer"
)
