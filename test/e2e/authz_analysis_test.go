package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// The analysis operations of the authorization matrix: AnalysisTemplates
// and AnalysisRuns belong to project authz (as Stages do: a grant of
// every domain of it), ClusterAnalysisTemplates to no project (only a
// grant of every project and domain, here the admin's, reaches them).

// analysisBody is an AnalysisTemplate, ClusterAnalysisTemplate or
// AnalysisRun named name, with one web metric.
func analysisBody(name string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"metrics":[{"name":"m","provider":{"web":{"url":"http://example.invalid/"}}}]}}`, name)
}

// clusterVerbs are a subject's verbs in every project and domain.
func clusterVerbs(sub matrixSubject) []string {
	if sub.name == "admin" {
		return sub.verbs
	}
	return nil
}

// analysisMatrix creates, as the admin, an object of each kind to read,
// and per subject one to replace and one to delete; it returns the
// operations that use them.
func analysisMatrix(t *testing.T, s *server, subjects []matrixSubject) map[string]matrixOp {
	const AT, CT, AR = "/projects/authz/analysis-templates", "/cluster-analysis-templates", "/projects/authz/analysis-runs"
	matrixPost(t, s, AT, analysisBody("at"), http.StatusCreated, nil)
	matrixPost(t, s, CT, analysisBody("cat"), http.StatusCreated, nil)
	matrixPost(t, s, AR, analysisBody("ar"), http.StatusCreated, nil)
	for _, sub := range subjects {
		for _, path := range []string{AT, CT} {
			matrixPost(t, s, path, analysisBody("rp-"+sub.name), http.StatusCreated, nil)
			matrixPost(t, s, path, analysisBody("dl-"+sub.name), http.StatusCreated, nil)
		}
		matrixPost(t, s, AR, analysisBody("dl-"+sub.name), http.StatusCreated, nil)
	}
	get := func(path string) func(string) (string, string, string) {
		return func(string) (string, string, string) { return "GET", path, "" }
	}
	create := func(path string) func(string) (string, string, string) {
		return func(sub string) (string, string, string) { return "POST", path, analysisBody("cr-" + sub) }
	}
	replace := func(path string) func(string) (string, string, string) {
		return func(sub string) (string, string, string) {
			var cur map[string]any
			if !matrixGet(t, s, path+"/rp-"+sub, &cur) {
				t.Fatalf("get %s/rp-%s", path, sub)
			}
			cur["spec"].(map[string]any)["dryRun"] = []any{map[string]any{"metricName": "m"}}
			b, _ := json.Marshal(cur)
			return "PUT", path + "/rp-" + sub, string(b)
		}
	}
	del := func(path string) func(string) (string, string, string) {
		return func(sub string) (string, string, string) { return "DELETE", path + "/dl-" + sub, "" }
	}
	read, write := []string{"read"}, []string{"write"}
	return map[string]matrixOp{
		"listAnalysisTemplates":          {verbs: read, stage: true, ok: 200, request: get(AT)},
		"getAnalysisTemplate":            {verbs: read, stage: true, ok: 200, request: get(AT + "/at")},
		"createAnalysisTemplate":         {verbs: write, stage: true, ok: 201, request: create(AT)},
		"replaceAnalysisTemplate":        {verbs: write, stage: true, ok: 200, request: replace(AT)},
		"deleteAnalysisTemplate":         {verbs: write, stage: true, ok: 204, request: del(AT)},
		"listClusterAnalysisTemplates":   {verbs: read, cluster: true, ok: 200, request: get(CT)},
		"getClusterAnalysisTemplate":     {verbs: read, cluster: true, ok: 200, request: get(CT + "/cat")},
		"createClusterAnalysisTemplate":  {verbs: write, cluster: true, ok: 201, request: create(CT)},
		"replaceClusterAnalysisTemplate": {verbs: write, cluster: true, ok: 200, request: replace(CT)},
		"deleteClusterAnalysisTemplate":  {verbs: write, cluster: true, ok: 204, request: del(CT)},
		"listAnalysisRuns":               {verbs: read, stage: true, ok: 200, request: get(AR)},
		"getAnalysisRun":                 {verbs: read, stage: true, ok: 200, request: get(AR + "/ar")},
		"createAnalysisRun":              {verbs: write, stage: true, ok: 201, request: create(AR)},
		"deleteAnalysisRun":              {verbs: write, stage: true, ok: 204, request: del(AR)},
		"streamProjectAnalysisRuns":      {verbs: read, stage: true, ok: 200, request: get("/projects/authz/analysis-run-events")},
	}
}
