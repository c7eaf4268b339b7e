package v1alpha1

// Condition types (Kargo api/v1alpha1/conditions.go). See
// https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#typical-status-properties
const (
	// ConditionTypeReady denotes that the resource is ready, i.e. fully
	// operational. Positive polarity.
	ConditionTypeReady = "Ready"
	// ConditionTypeReconciling denotes that the resource is being reconciled;
	// removed when the controller has finished. Negative polarity.
	ConditionTypeReconciling = "Reconciling"
	// ConditionTypeStalled denotes that reconciliation has stalled. Negative
	// polarity. Not used for Stages.
	ConditionTypeStalled = "Stalled"
	// ConditionTypeHealthy denotes that the resource is healthy. Positive
	// polarity.
	ConditionTypeHealthy = "Healthy"
	// ConditionTypePromoting denotes that Freight is being promoted to the
	// Stage. Negative polarity.
	ConditionTypePromoting = "Promoting"
	// ConditionTypeVerified denotes that the Stage's current Freight has been
	// verified. Positive polarity.
	ConditionTypeVerified = "Verified"
)
