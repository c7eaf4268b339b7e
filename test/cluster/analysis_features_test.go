package cluster_test

import (
	"context"
	"net/http"
)

// The features of Argo Rollouts' analysis kinds, in featureList's order:
// an AnalysisTemplate, a ClusterAnalysisTemplate and an AnalysisRun made,
// changed and deleted through the server. A ClusterAnalysisTemplate
// belongs to no project, so its name carries the project's: the
// permission test's servers share the cluster.

// webMetric is a metric Rollouts' checks accept.
func webMetric() map[string]any {
	return map[string]any{"name": "health", "provider": map[string]any{"web": map[string]any{"url": "http://health.invalid/"}}}
}

func (f *features) analysisTemplatesPath() string {
	return "/api/v1/projects/" + f.project + "/analysis-templates"
}

func (f *features) createAnalysisTemplate(ctx context.Context) error {
	body := map[string]any{"metadata": map[string]any{"name": "health"}, "spec": map[string]any{"metrics": []any{webMetric()}}}
	return f.s.DoJSON(ctx, http.MethodPost, f.analysisTemplatesPath(), body, nil, http.StatusCreated)
}

func (f *features) replaceAnalysisTemplate(ctx context.Context) error {
	return replaceSpec(ctx, f, f.analysisTemplatesPath()+"/health")
}

func (f *features) deleteAnalysisTemplate(ctx context.Context) error {
	return f.s.DoJSON(ctx, http.MethodDelete, f.analysisTemplatesPath()+"/health", nil, nil, http.StatusNoContent)
}

func (f *features) clusterTemplatePath() string {
	return "/api/v1/cluster-analysis-templates/health-" + f.project
}

func (f *features) createClusterAnalysisTemplate(ctx context.Context) error {
	body := map[string]any{"metadata": map[string]any{"name": "health-" + f.project}, "spec": map[string]any{"metrics": []any{webMetric()}}}
	return f.s.DoJSON(ctx, http.MethodPost, "/api/v1/cluster-analysis-templates", body, nil, http.StatusCreated)
}

func (f *features) replaceClusterAnalysisTemplate(ctx context.Context) error {
	return replaceSpec(ctx, f, f.clusterTemplatePath())
}

func (f *features) deleteClusterAnalysisTemplate(ctx context.Context) error {
	return f.s.DoJSON(ctx, http.MethodDelete, f.clusterTemplatePath(), nil, nil, http.StatusNoContent)
}

// replaceSpec reads a template and puts it back with its metric's
// interval set.
func replaceSpec(ctx context.Context, f *features, path string) error {
	var have map[string]any
	if err := f.s.DoJSON(ctx, http.MethodGet, path, nil, &have, http.StatusOK); err != nil {
		return err
	}
	m := webMetric()
	m["interval"] = "1m"
	have["spec"] = map[string]any{"metrics": []any{m}}
	return f.s.DoJSON(ctx, http.MethodPut, path, have, nil, http.StatusOK)
}

func (f *features) analysisRunsPath() string {
	return "/api/v1/projects/" + f.project + "/analysis-runs"
}

func (f *features) createAnalysisRun(ctx context.Context) error {
	body := map[string]any{"metadata": map[string]any{"name": "health-1"}, "spec": map[string]any{"metrics": []any{webMetric()}}}
	return f.s.DoJSON(ctx, http.MethodPost, f.analysisRunsPath(), body, nil, http.StatusCreated)
}

func (f *features) deleteAnalysisRun(ctx context.Context) error {
	return f.s.DoJSON(ctx, http.MethodDelete, f.analysisRunsPath()+"/health-1", nil, nil, http.StatusNoContent)
}
