package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/pkg/client"
)

// webMetric is a metric Rollouts' checks accept: one measurement of a URL.
func webMetric(name string) rolloutsapi.Metric {
	return rolloutsapi.Metric{Name: name, SuccessCondition: "result == 'ok'",
		Provider: rolloutsapi.MetricProvider{Web: &rolloutsapi.WebMetric{URL: "http://health.invalid/", JSONPath: "{$.status}"}}}
}

// contractAnalysis walks the analysis operations: an AnalysisTemplate, a
// ClusterAnalysisTemplate and an AnalysisRun created, listed, read,
// replaced (the templates), streamed (the runs) and deleted.
func contractAnalysis(t *testing.T, ctx context.Context, c *client.ClientWithResponses) {
	k := fmt.Sprintf("contracta%d", seq.Add(1))
	spec := rolloutsapi.AnalysisTemplateSpec{Metrics: []rolloutsapi.Metric{webMetric("health")}}

	ct, err := c.CreateAnalysisTemplateWithResponse(ctx, k, rolloutsapi.AnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: "health"}, Spec: spec})
	want(t, ct, err, http.StatusCreated)
	lt, err := c.ListAnalysisTemplatesWithResponse(ctx, k)
	want(t, lt, err, http.StatusOK)
	if n := len(decoded(t, lt.JSON200).Items); n != 1 {
		t.Errorf("%d AnalysisTemplates, want 1", n)
	}
	gt, err := c.GetAnalysisTemplateWithResponse(ctx, k, "health")
	want(t, gt, err, http.StatusOK)
	next := *decoded(t, gt.JSON200)
	next.Spec.Metrics[0].Interval = "1m"
	rt, err := c.ReplaceAnalysisTemplateWithResponse(ctx, k, "health", next)
	want(t, rt, err, http.StatusOK)
	if decoded(t, rt.JSON200).Spec.Metrics[0].Interval != "1m" {
		t.Errorf("replaced: %+v", rt.JSON200.Spec)
	}
	dt, err := c.DeleteAnalysisTemplateWithResponse(ctx, k, "health")
	want(t, dt, err, http.StatusNoContent)

	contractClusterAnalysis(t, ctx, c, "health-"+k, spec)

	run := rolloutsapi.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Name: "health-1"}, Spec: rolloutsapi.AnalysisRunSpec{Metrics: spec.Metrics}}
	cr, err := c.CreateAnalysisRunWithResponse(ctx, k, run)
	want(t, cr, err, http.StatusCreated)
	lr, err := c.ListAnalysisRunsWithResponse(ctx, k)
	want(t, lr, err, http.StatusOK)
	if n := len(decoded(t, lr.JSON200).Items); n != 1 {
		t.Errorf("%d AnalysisRuns, want 1", n)
	}
	gr, err := c.GetAnalysisRunWithResponse(ctx, k, "health-1")
	want(t, gr, err, http.StatusOK)
	if got := decoded(t, gr.JSON200); got.Spec.Metrics[0].Provider.Web == nil {
		t.Errorf("read back: %+v", got.Spec)
	}
	s, err := c.StreamProjectAnalysisRuns(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if items := untilSynced(t, ctx, s); len(items) != 1 || items[0].Metadata == nil || items[0].Metadata.Name == nil || *items[0].Metadata.Name != "health-1" {
		t.Errorf("the AnalysisRuns' snapshot: %v", items)
	}
	dr, err := c.DeleteAnalysisRunWithResponse(ctx, k, "health-1")
	want(t, dr, err, http.StatusNoContent)
}

func contractClusterAnalysis(t *testing.T, ctx context.Context, c *client.ClientWithResponses, name string, spec rolloutsapi.AnalysisTemplateSpec) {
	cc, err := c.CreateClusterAnalysisTemplateWithResponse(ctx, rolloutsapi.ClusterAnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	want(t, cc, err, http.StatusCreated)
	lc, err := c.ListClusterAnalysisTemplatesWithResponse(ctx)
	want(t, lc, err, http.StatusOK)
	if len(decoded(t, lc.JSON200).Items) == 0 {
		t.Error("no ClusterAnalysisTemplates")
	}
	gc, err := c.GetClusterAnalysisTemplateWithResponse(ctx, name)
	want(t, gc, err, http.StatusOK)
	next := *decoded(t, gc.JSON200)
	next.Spec.DryRun = []rolloutsapi.DryRun{{MetricName: "health"}}
	rc, err := c.ReplaceClusterAnalysisTemplateWithResponse(ctx, name, next)
	want(t, rc, err, http.StatusOK)
	if len(decoded(t, rc.JSON200).Spec.DryRun) != 1 {
		t.Errorf("replaced: %+v", rc.JSON200.Spec)
	}
	dc, err := c.DeleteClusterAnalysisTemplateWithResponse(ctx, name)
	want(t, dc, err, http.StatusNoContent)
}
