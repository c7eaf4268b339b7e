package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"taskactions/internal/app"
	"taskactions/pkg/client"
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

const jobTokens = `
subjects:
  - {name: writer, token: jwriter-token-0123456789, grants: [{project: jobs, domain: "*", verbs: [read, write]}]}
  - {name: runner, token: jrunner-token-0123456789, grants: [{project: jobs, domain: "*", verbs: [read, write, execute]}]}
`

// A job metric runs a command on this server (with --analysis-jobs), as a
// process action does: a subject that may write AnalysisTemplates and
// AnalysisRuns but not execute cannot write one with a job metric (403,
// naming execute); one with execute can; a web metric needs write alone.
func TestJobMetricsNeedExecute(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tokens, []byte(jobTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := startServer(filepath.Join(dir, "data"), func(c *app.Config) { c.AuthTokensFile = tokens; c.AnalysisJobs = true })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx := context.Background()
	as := func(token string) *client.ClientWithResponses {
		c, err := client.NewClientWithResponses(s.URL()+"/api/v1", client.WithBearerToken(token))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	writer, runner := as("jwriter-token-0123456789"), as("jrunner-token-0123456789")
	jobTemplate := func(name string) string {
		return strings.Replace(jobRun(name, "0"), "kind: AnalysisRun", "kind: AnalysisTemplate", 1)
	}
	for _, c := range []struct {
		name string
		call func() (int, []byte, error)
		want int
	}{
		{"writer, web template", func() (int, []byte, error) {
			r, err := writer.CreateAnalysisTemplateWithBodyWithResponse(ctx, "jobs", "application/json", strings.NewReader(analysisBody("web")))
			if err != nil {
				return 0, nil, err
			}
			return r.StatusCode(), r.Body, nil
		}, http.StatusCreated},
		{"writer, job template", func() (int, []byte, error) {
			r, err := writer.CreateAnalysisTemplateWithBodyWithResponse(ctx, "jobs", "application/yaml", strings.NewReader(jobTemplate("job-w")))
			if err != nil {
				return 0, nil, err
			}
			return r.StatusCode(), r.Body, nil
		}, http.StatusForbidden},
		{"writer, job run", func() (int, []byte, error) {
			r, err := writer.CreateAnalysisRunWithBodyWithResponse(ctx, "jobs", "application/yaml", strings.NewReader(jobRun("job-w", "0")))
			if err != nil {
				return 0, nil, err
			}
			return r.StatusCode(), r.Body, nil
		}, http.StatusForbidden},
		{"runner, job template", func() (int, []byte, error) {
			r, err := runner.CreateAnalysisTemplateWithBodyWithResponse(ctx, "jobs", "application/yaml", strings.NewReader(jobTemplate("job-r")))
			if err != nil {
				return 0, nil, err
			}
			return r.StatusCode(), r.Body, nil
		}, http.StatusCreated},
		{"writer, job template over a web one", func() (int, []byte, error) {
			cur, err := writer.GetAnalysisTemplateWithResponse(ctx, "jobs", "web")
			if err != nil || cur.JSON200 == nil {
				t.Fatalf("get the web template: %v", err)
			}
			job, err := runner.GetAnalysisTemplateWithResponse(ctx, "jobs", "job-r")
			if err != nil || job.JSON200 == nil {
				t.Fatalf("get the runner's job template: %v", err)
			}
			at := *cur.JSON200
			at.Spec.Metrics = job.JSON200.Spec.Metrics
			r, err := writer.ReplaceAnalysisTemplateWithResponse(ctx, "jobs", "web", at)
			if err != nil {
				return 0, nil, err
			}
			return r.StatusCode(), r.Body, nil
		}, http.StatusForbidden},
		{"runner, job run", func() (int, []byte, error) {
			r, err := runner.CreateAnalysisRunWithBodyWithResponse(ctx, "jobs", "application/yaml", strings.NewReader(jobRun("job-r", "0")))
			if err != nil {
				return 0, nil, err
			}
			return r.StatusCode(), r.Body, nil
		}, http.StatusCreated},
	} {
		got, body, err := c.call()
		if err != nil || got != c.want {
			t.Errorf("%s: HTTP %d %s (%v); want %d", c.name, got, body, err, c.want)
		}
		if got == http.StatusForbidden && !strings.Contains(string(body), "execute") {
			t.Errorf("%s: the 403 does not name execute: %s", c.name, body)
		}
	}
}
