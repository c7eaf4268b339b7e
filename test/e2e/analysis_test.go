package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/pkg/client"
)

// Argo Rollouts' analysis kinds (argoproj.io/v1alpha1) over real HTTP with
// the generated client and the admin token, and with kubectl on the
// embedded control plane: the CRDs are Rollouts' own, the checks and
// messages Rollouts' analysis controller's.

// templateYAML is an AnalysisTemplate as Rollouts' documentation writes
// it: a web metric taking an arg, and a Datadog metric, a provider this
// server keeps as written.
const templateYAML = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: success-rate
spec:
  args:
  - name: service-name
  metrics:
  - name: webmetric
    interval: 1m
    count: 3
    failureLimit: 1
    successCondition: result == 'ok'
    provider:
      web:
        url: "http://{{args.service-name}}.demo.svc/health"
        headers:
        - {key: Accept, value: application/json}
        jsonPath: "{$.status}"
        timeoutSeconds: 20
  - name: errors
    provider:
      datadog:
        apiVersion: v2
        interval: 5m
        queries:
          a: sum:requests.error.count{service:{{args.service-name}}}
        formula: a
`

// Create (YAML), get and list an AnalysisTemplate; the web metric comes
// back typed, the Datadog one as written.
func TestAnalysisTemplateREST(t *testing.T) {
	ns := stageProject()
	ctx, cancel := stageCtx()
	defer cancel()
	cr, err := srv.api.CreateAnalysisTemplateWithBodyWithResponse(ctx, ns, "application/yaml", strings.NewReader(templateYAML))
	if err != nil {
		t.Fatal(err)
	}
	if cr.StatusCode() != http.StatusCreated {
		t.Fatalf("create: HTTP %d %s", cr.StatusCode(), cr.Body)
	}
	gr, err := srv.api.GetAnalysisTemplateWithResponse(ctx, ns, "success-rate")
	if err != nil || gr.JSON200 == nil {
		t.Fatalf("get: %v %s", err, gr.Body)
	}
	got := gr.JSON200
	web := got.Spec.Metrics[0].Provider.Web
	if got.Namespace != ns || web == nil || web.URL != "http://{{args.service-name}}.demo.svc/health" || web.TimeoutSeconds != 20 ||
		len(web.Headers) != 1 || got.Spec.Metrics[0].Count.IntValue() != 3 || got.Spec.Args[0].Name != "service-name" {
		t.Errorf("read back: %+v", got.Spec)
	}
	var datadog map[string]any
	if dd := got.Spec.Metrics[1].Provider.Datadog; dd == nil || json.Unmarshal(dd.Raw, &datadog) != nil ||
		datadog["formula"] != "a" || datadog["queries"].(map[string]any)["a"] != "sum:requests.error.count{service:{{args.service-name}}}" {
		t.Errorf("the Datadog provider: %s", got.Spec.Metrics[1].Provider.Datadog)
	}
	lr, err := srv.api.ListAnalysisTemplatesWithResponse(ctx, ns)
	if err != nil || lr.JSON200 == nil || len(lr.JSON200.Items) != 1 || lr.JSON200.Items[0].Name != "success-rate" {
		t.Fatalf("list: %v %s", err, lr.Body)
	}
	// The object as read goes back as it is, raw provider included.
	got.Spec.Metrics[0].Interval = "2m"
	rr, err := srv.api.ReplaceAnalysisTemplateWithResponse(ctx, ns, "success-rate", *got)
	if err != nil || rr.JSON200 == nil || rr.JSON200.Spec.Metrics[0].Interval != "2m" ||
		!bytes.Equal(rr.JSON200.Spec.Metrics[1].Provider.Datadog.Raw, got.Spec.Metrics[1].Provider.Datadog.Raw) {
		t.Fatalf("replace: %v %s", err, rr.Body)
	}
}

// What Rollouts' analysis controller refuses to run is refused when
// written, with its messages; nothing is created.
func TestAnalysisInvalid(t *testing.T) {
	ns := stageProject()
	ctx, cancel := stageCtx()
	defer cancel()
	for _, c := range []struct {
		name, body, pointer, detail string
	}{
		{"no provider", `{"metadata":{"name":"a"},"spec":{"metrics":[{"name":"m","provider":{}}]}}`,
			"/spec/metrics/0/provider", "metrics[0]: no provider specified"},
		{"duplicate names", `{"metadata":{"name":"b"},"spec":{"metrics":[` + webJSON("m") + `,` + webJSON("m") + `]}}`,
			"/spec/metrics/1/name", "metrics[1]: duplicate name 'm'"},
		{"count below failureLimit", `{"metadata":{"name":"c"},"spec":{"metrics":[{"name":"m","interval":"1m","count":2,"failureLimit":3,"provider":{"web":{"url":"http://x"}}}]}}`,
			"/spec/metrics/0/count", "metrics[0]: count (2) must be >= failureLimit + consecutiveSuccessLimit (3 + 0) if both >= 0"},
	} {
		r, err := srv.api.CreateAnalysisTemplateWithBodyWithResponse(ctx, ns, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		p := (stageReply{code: r.StatusCode(), header: r.HTTPResponse.Header, body: r.Body}).problem(t, 400)
		if !hasFieldError(p, c.pointer, c.detail) {
			t.Errorf("%s: %s", c.name, r.Body)
		}
	}
	// A run's args must resolve, as when Rollouts' controller starts it.
	run := `{"metadata":{"name":"r"},"spec":{"args":[{"name":"host"}],"metrics":[{"name":"m","provider":{"web":{"url":"http://{{args.host}}/"}}}]}}`
	r, err := srv.api.CreateAnalysisRunWithBodyWithResponse(ctx, ns, "application/json", strings.NewReader(run))
	if err != nil {
		t.Fatal(err)
	}
	p := (stageReply{code: r.StatusCode(), header: r.HTTPResponse.Header, body: r.Body}).problem(t, 400)
	if !hasFieldError(p, "/spec/args", `Unable to resolve metric arguments: argument "host" was not supplied`) {
		t.Errorf("a run without an arg's value: %s", r.Body)
	}
	if lr, err := srv.api.ListAnalysisTemplatesWithResponse(ctx, ns); err != nil || lr.JSON200 == nil || len(lr.JSON200.Items) != 0 {
		t.Errorf("refused templates exist: %v %s", err, lr.Body)
	}
}

func webJSON(name string) string {
	return `{"name":"` + name + `","provider":{"web":{"url":"http://x"}}}`
}

// An AnalysisRun created by hand shows in the project's stream, reads
// back with its args and without the status its body had (the
// controller's), and its delete is a last event. The analysis runner
// takes the run up at once, so its own status writes may come between
// the create's event and the delete's.
func TestAnalysisRunREST(t *testing.T) {
	ns := stageProject()
	ctx, cancel := stageCtx()
	defer cancel()
	s, err := srv.api.StreamProjectAnalysisRuns(ctx, ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nextRun := func() client.AnalysisRunEvent {
		t.Helper()
		for {
			e, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			if e.Item != nil {
				return *e.Item
			}
		}
	}
	host := "checkout"
	run := rolloutsapi.AnalysisRun{
		ObjectMeta: metav1.ObjectMeta{Name: "checkout-1"},
		Spec: rolloutsapi.AnalysisRunSpec{
			Args:    []rolloutsapi.Argument{{Name: "host", Value: &host}},
			Metrics: []rolloutsapi.Metric{{Name: "health", Provider: rolloutsapi.MetricProvider{Web: &rolloutsapi.WebMetric{URL: "http://{{args.host}}/health"}}}},
		},
		Status: rolloutsapi.AnalysisRunStatus{Phase: rolloutsapi.AnalysisPhaseSuccessful},
	}
	cr, err := srv.api.CreateAnalysisRunWithResponse(ctx, ns, run)
	if err != nil || cr.JSON201 == nil {
		t.Fatalf("create: %v %s", err, cr.Body)
	}
	if ev := nextRun(); ev.Metadata == nil || *ev.Metadata.Name != "checkout-1" || ev.Deleted {
		t.Errorf("stream: %+v", ev)
	}
	gr, err := srv.api.GetAnalysisRunWithResponse(ctx, ns, "checkout-1")
	if err != nil || gr.JSON200 == nil {
		t.Fatalf("get: %v %s", err, gr.Body)
	}
	if got := gr.JSON200; got.Status.Phase == rolloutsapi.AnalysisPhaseSuccessful || *got.Spec.Args[0].Value != "checkout" || got.Spec.Metrics[0].Provider.Web.URL != "http://{{args.host}}/health" {
		t.Errorf("read back: %+v %+v", got.Spec, got.Status)
	}
	dr, err := srv.api.DeleteAnalysisRunWithResponse(ctx, ns, "checkout-1")
	if err != nil || dr.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: %v %s", err, dr.Body)
	}
	for ev := nextRun(); !ev.Deleted; ev = nextRun() {
		if ev.Metadata == nil || *ev.Metadata.Name != "checkout-1" {
			t.Fatalf("stream after the delete: %+v, want the runner's status writes, then the delete", ev)
		}
	}
}

// kubectl sees what REST wrote, with Rollouts' printer columns, and REST
// what kubectl wrote.
func TestAnalysisKubectl(t *testing.T) {
	ns := stageProject()
	ctx, cancel := stageCtx()
	defer cancel()
	k := newKubectl(t)
	k.must(templateYAML, "apply", "-n", ns, "-f", "-")
	run := rolloutsapi.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Name: "by-rest"}, Spec: rolloutsapi.AnalysisRunSpec{
		Metrics: []rolloutsapi.Metric{{Name: "m", Provider: rolloutsapi.MetricProvider{Web: &rolloutsapi.WebMetric{URL: "http://x"}}}}}}
	if cr, err := srv.api.CreateAnalysisRunWithResponse(ctx, ns, run); err != nil || cr.StatusCode() != http.StatusCreated {
		t.Fatalf("create a run: %v %s", err, cr.Body)
	}
	out := k.must("", "get", "analysistemplates,analysisruns", "-n", ns)
	if !strings.Contains(out, "analysistemplate.argoproj.io/success-rate") || !strings.Contains(out, "analysisrun.argoproj.io/by-rest") || !strings.Contains(out, "STATUS") {
		t.Errorf("kubectl get analysistemplates,analysisruns:\n%s", out)
	}
	lr, err := srv.api.ListAnalysisTemplatesWithResponse(ctx, ns)
	if err != nil || lr.JSON200 == nil || len(lr.JSON200.Items) != 1 || lr.JSON200.Items[0].Spec.Metrics[0].Provider.Web == nil {
		t.Errorf("REST list of kubectl's template: %v %s", err, lr.Body)
	}
	name := "kubectl-" + ns
	cat := rolloutsapi.ClusterAnalysisTemplate{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: rolloutsapi.AnalysisTemplateSpec{Metrics: run.Spec.Metrics}}
	if cr, err := srv.api.CreateClusterAnalysisTemplateWithResponse(ctx, cat); err != nil || cr.StatusCode() != http.StatusCreated {
		t.Fatalf("create a ClusterAnalysisTemplate: %v %s", err, cr.Body)
	}
	if out := k.must("", "get", "clusteranalysistemplates", "-o", "name"); !strings.Contains(out, "clusteranalysistemplate.argoproj.io/"+name) {
		t.Errorf("kubectl get clusteranalysistemplates:\n%s", out)
	}
}
