package rules

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// assessHealth runs the health checks the last Promotion recorded. No
// health checker is registered here, so each check is Unknown with Kargo's
// issue for an unknown kind; zero checks are Healthy.
func assessHealth(s *kargoapi.Stage, _ stageInputs, st kargoapi.StageStatus, now metav1.Time) kargoapi.StageStatus {
	last := st.LastPromotion
	if last == nil {
		setCondition(&st, metav1.Condition{
			Type: kargoapi.ConditionTypeHealthy, Status: metav1.ConditionUnknown,
			Reason: ReasonNoFreight, Message: MsgNoFreight, ObservedGeneration: s.Generation,
		}, now)
		st.Health = nil
		return st
	}
	var phase kargoapi.PromotionPhase
	if last.Status != nil {
		phase = last.Status.Phase
	}
	if phase != kargoapi.PromotionPhaseSucceeded {
		setCondition(&st, metav1.Condition{
			Type: kargoapi.ConditionTypeHealthy, Status: metav1.ConditionUnknown,
			Reason: "LastPromotion" + string(phase), Message: MsgLastPromotionFailed, ObservedGeneration: s.Generation,
		}, now)
		st.Health = &kargoapi.Health{Status: kargoapi.HealthStateUnknown, Issues: []string{MsgLastPromotionFailed}}
		return st
	}

	checks := last.GetHealthChecks()
	health := kargoapi.Health{Status: kargoapi.HealthStateHealthy}
	for _, c := range checks {
		health.Status = health.Status.Merge(kargoapi.HealthStateUnknown)
		health.Issues = append(health.Issues, fmt.Sprintf(msgNoHealthCheckerFmt, c.Uses))
	}
	st.Health = &health
	cond := metav1.Condition{Type: kargoapi.ConditionTypeHealthy, Reason: string(health.Status), ObservedGeneration: s.Generation}
	switch health.Status {
	case kargoapi.HealthStateHealthy:
		cond.Status = metav1.ConditionTrue
		cond.Message = fmt.Sprintf("Stage is healthy (performed %d health checks)", len(checks))
	case kargoapi.HealthStateUnhealthy:
		cond.Status = metav1.ConditionFalse
		cond.Message = fmt.Sprintf("Stage is unhealthy (%d issues in %d health checks)", len(health.Issues), len(checks))
	default:
		cond.Status = metav1.ConditionUnknown
	}
	setCondition(&st, cond, now)
	return st
}
