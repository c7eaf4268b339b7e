package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/pkg/client"
)

// contractProjectConfig creates, reads, replaces and deletes a project's
// ProjectConfig.
func contractProjectConfig(t *testing.T, ctx context.Context, c *client.ClientWithResponses) {
	k := fmt.Sprintf("contractpc%d", seq.Add(1))
	cfg := kargoapi.ProjectConfig{Spec: kargoapi.ProjectConfigSpec{PromotionPolicies: []kargoapi.PromotionPolicy{
		{StageSelector: &kargoapi.PromotionPolicySelector{Name: "test"}, AutoPromotionEnabled: true},
	}}}
	cr, err := c.PutProjectConfigWithResponse(ctx, k, cfg)
	want(t, cr, err, http.StatusCreated)
	if got := decoded(t, cr.JSON201); got.Name != k || len(got.Spec.PromotionPolicies) != 1 {
		t.Errorf("created %s: %+v", got.Name, got.Spec)
	}
	gr, err := c.GetProjectConfigWithResponse(ctx, k)
	want(t, gr, err, http.StatusOK)
	next := *decoded(t, gr.JSON200)
	next.Spec.PromotionPolicies = append(next.Spec.PromotionPolicies, kargoapi.PromotionPolicy{
		StageSelector: &kargoapi.PromotionPolicySelector{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "dev"}}}})
	rr, err := c.PutProjectConfigWithResponse(ctx, k, next)
	want(t, rr, err, http.StatusOK)
	if got := decoded(t, rr.JSON200); len(got.Spec.PromotionPolicies) != 2 || got.Spec.PromotionPolicies[1].StageSelector.MatchLabels["tier"] != "dev" {
		t.Errorf("replaced: %+v", got.Spec)
	}
	dr, err := c.DeleteProjectConfigWithResponse(ctx, k)
	want(t, dr, err, http.StatusNoContent)
}
