package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	rolloutsapi "taskactions/api/rollouts/v1alpha1"
	"taskactions/internal/analysis/runner"
	"taskactions/pkg/client"
)

// health is the service a verification's web metric asks: it answers
// {"status": <status>} and counts the questions.
type health struct {
	mu     sync.Mutex
	status string
	paths  []string
	hits   atomic.Int32
	srv    *httptest.Server
}

func newHealth(t *testing.T, status string) *health {
	h := &health{status: status}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.hits.Add(1)
		h.mu.Lock()
		st := h.status
		h.paths = append(h.paths, r.URL.Path)
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":%q}`, st)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *health) set(status string) {
	h.mu.Lock()
	h.status = status
	h.mu.Unlock()
}

// verifyingTemplate is an AnalysisTemplate of one web metric against the
// URL its arg names, taken count times interval apart; with dryRun, also
// a metric in dry-run mode that always fails.
func verifyingTemplate(name string, count int, interval string, dryRun bool) string {
	t := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: %s
spec:
  args:
  - name: url
  metrics:
  - name: health
    count: %d
    interval: %s
    successCondition: result == 'ok'
    provider:
      web:
        url: "{{args.url}}"
        jsonPath: "{$.status}"
        timeoutSeconds: 5
`, name, count, interval)
	if dryRun {
		t += `  - name: canary
    successCondition: result == 'never'
    provider:
      web:
        url: "{{args.url}}"
        jsonPath: "{$.status}"
  dryRun:
  - metricName: canary
`
	}
	return t
}

// verifyingStage creates a Stage that takes Freight from upstream and
// verifies it with the template, whose url arg is a Kargo expression of
// the Stage and the Freight: <url>/<stage>/<the Freight's image tag>.
func (k *kproject) verifyingStage(name, upstream, template, url string) {
	k.t.Helper()
	body := mustMarshal(k.t, map[string]any{
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"requestedFreight":  []any{map[string]any{"origin": map[string]any{"kind": "Warehouse", "name": "w"}, "sources": from(upstream)}},
			"promotionTemplate": map[string]any{"spec": map[string]any{"steps": []any{pstep("echo", "", nil)}}},
			"verification": map[string]any{
				"analysisTemplates": []any{map[string]any{"name": template}},
				"args": []any{map[string]any{"name": "url",
					"value": url + "/${{ ctx.stage }}/${{ imageFrom('ghcr.io/example/app').Tag }}"}},
			},
		},
	})
	into[kargoapi.Stage](k.t, k.postStage(body), http.StatusCreated)
}

// verification waits until the Stage's current Freight is freight and
// its verification is terminal (or, with phase set, has that phase), and
// returns it.
func (k *kproject) verification(stage, freight string, phase kargoapi.VerificationPhase) kargoapi.VerificationInfo {
	k.t.Helper()
	var vi kargoapi.VerificationInfo
	if !within(30*time.Second, func() bool {
		s := k.stage(stage)
		fc := s.Status.FreightHistory.Current()
		if fc == nil || !fc.Includes(freight) || fc.VerificationHistory.Current() == nil {
			return false
		}
		vi = *fc.VerificationHistory.Current()
		return (phase == "" && vi.Phase.IsTerminal()) || (phase != "" && vi.Phase == phase)
	}) {
		run := "none"
		if vi.AnalysisRun != nil {
			ar := k.analysisRun(vi.AnalysisRun.Name)
			run = fmt.Sprintf("%s: status %s, actions %v", ar.Name, mustMarshal(k.t, ar.Status), phasesOf(k.runActions(ar.Name)))
		}
		k.t.Fatalf("Stage %s's verification: %s %q, want %q; AnalysisRun %s", stage, vi.Phase, vi.Message, phase, run)
	}
	return vi
}

func (k *kproject) analysisRun(name string) rolloutsapi.AnalysisRun {
	k.t.Helper()
	r, err := k.s.api.GetAnalysisRunWithResponse(context.Background(), k.name, name)
	if err != nil || r.StatusCode() != http.StatusOK {
		k.t.Fatalf("get AnalysisRun %s: %v %s", name, err, r.Body)
	}
	var ar rolloutsapi.AnalysisRun
	mustJSON(k.t, r.Body, &ar)
	return ar
}

// TestVerificationPipeline: test → uat → prod, where uat verifies its
// Freight with a web metric against a service the test controls.
// Passing Freight is verified in uat and may go to prod; failing Freight
// is not, with Kargo's message, until a reverify after the fix passes;
// an abort stops a verification; every measurement is one action of the
// AnalysisRun's run and one request to the service.
func TestVerificationPipeline(t *testing.T) {
	s := promoServer(t)
	k := newKProject(t, s)
	svc := newHealth(t, "ok")
	ctx := context.Background()
	for name, body := range map[string]string{"health": verifyingTemplate("health", 2, "1s", true), "slow": verifyingTemplate("slow", 60, "1s", false)} {
		r, err := s.api.CreateAnalysisTemplateWithBodyWithResponse(ctx, k.name, "application/yaml", strings.NewReader(body))
		if err != nil || r.StatusCode() != http.StatusCreated {
			t.Fatalf("create AnalysisTemplate %s: %v %s", name, err, r.Body)
		}
	}
	k.createStage("test", direct(), nil, pstep("echo", "", nil))
	k.verifyingStage("uat", "test", "health", svc.srv.URL)
	k.createStage("prod", from("uat"), nil, pstep("echo", "", nil))

	// Passing Freight: verified in uat, two measurements (and one of the
	// dry-run metric, which fails without failing the run), then on to
	// prod.
	good := k.createFreight("1.0.0", "good")
	k.finished(k.promote("test", good.Name).Name)
	k.waitVerified(good.Name, "test")
	k.finished(k.promote("uat", good.Name).Name)
	vi := k.verification("uat", good.Name, "")
	if vi.Phase != kargoapi.VerificationPhaseSuccessful || vi.AnalysisRun == nil {
		t.Fatalf("uat's verification of good Freight: %s %q, run %v", vi.Phase, vi.Message, vi.AnalysisRun)
	}
	k.waitVerified(good.Name, "uat")
	ar := k.analysisRun(vi.AnalysisRun.Name)
	if ar.Labels[kargoapi.LabelKeyStage] != "uat" || ar.Status.Phase != rolloutsapi.AnalysisPhaseSuccessful ||
		len(ar.Status.MetricResults) != 2 || ar.Status.MetricResults[0].Count != 2 || ar.Status.MetricResults[0].Successful != 2 ||
		ar.Status.DryRunSummary == nil || ar.Status.DryRunSummary.Failed != 1 {
		t.Errorf("AnalysisRun %s: labels %v, status %s", ar.Name, ar.Labels, mustMarshal(t, ar.Status))
	}
	if got := svc.hits.Load(); got != 3 {
		t.Errorf("the service was asked %d times for 3 measurements", got)
	}
	svc.mu.Lock()
	if svc.paths[0] != "/uat/1.0.0" {
		t.Errorf("the metric asked %s, want the Stage and the Freight's tag: /uat/1.0.0", svc.paths[0])
	}
	svc.mu.Unlock()
	acts := k.runActions(vi.AnalysisRun.Name)
	if len(acts) != 4 || acts["analysis"].Phase != client.SUCCEEDED || acts["health-1"].Phase != client.SUCCEEDED ||
		acts["health-2"].Phase != client.SUCCEEDED || acts["canary-1"].Phase != client.FAILED {
		t.Errorf("the AnalysisRun's run: %v", phasesOf(acts))
	}
	// kubectl shows it, its phase in the STATUS column.
	if out := newKubectl(t).must("", "get", "analysisruns", "-n", k.name); !strings.Contains(out, ar.Name) || !strings.Contains(out, "Successful") {
		t.Errorf("kubectl get analysisruns:\n%s", out)
	}
	if h := acts["health-1"].PhaseHistory; len(h) == 0 || !strings.Contains(value(h[len(h)-1].Message), `value "ok"`) {
		t.Errorf("health-1's last phase says %v, want the value", mustMarshal(t, h))
	}
	k.finished(k.promote("prod", good.Name).Name)

	// Failing Freight: uat's verification fails with Rollouts' message,
	// and the Freight is not available to prod.
	svc.set("down")
	bad := k.createFreight("2.0.0", "bad")
	k.finished(k.promote("test", bad.Name).Name)
	k.waitVerified(bad.Name, "test")
	k.finished(k.promote("uat", bad.Name).Name)
	vi = k.verification("uat", bad.Name, "")
	const failed = `Metric "health" assessed Failed due to failed (1) > failureLimit (0)`
	if vi.Phase != kargoapi.VerificationPhaseFailed || vi.Message != failed {
		t.Fatalf("uat's verification of bad Freight: %s %q, want Failed %q", vi.Phase, vi.Message, failed)
	}
	if c := condition(k.stage("uat"), kargoapi.ConditionTypeVerified); c == nil || c.Status != "False" || c.Reason != "VerificationFailed" || c.Message != failed {
		t.Errorf("uat's Verified condition: %+v", c)
	}
	r := k.postPromotion("prod", fmt.Sprintf(`{"freight":%q}`, bad.Name))
	if p := r.problem(t, http.StatusBadRequest); !strings.Contains(p.Detail, fmt.Sprintf("Freight %q is not available to Stage %q", bad.Name, "prod")) {
		t.Errorf("promote failed Freight to prod: %q", p.Detail)
	}

	// Fixed: a reverify passes, and the Freight goes on.
	svc.set("ok")
	failedID := vi.ID
	rv, err := s.api.ReverifyStageWithResponse(ctx, k.name, "uat")
	want(t, rv, err, http.StatusOK)
	vi = k.verification("uat", bad.Name, kargoapi.VerificationPhaseSuccessful)
	if vi.ID == failedID || vi.Actor == "" {
		t.Errorf("reverification %s by %q, after %s", vi.ID, vi.Actor, failedID)
	}
	k.waitVerified(bad.Name, "uat")
	k.finished(k.promote("prod", bad.Name).Name)

	// An abort stops a verification that runs: the verification is
	// Failed, "Verification aborted by user", and nothing measures on.
	setTemplate(t, k, "uat", "slow")
	third := k.createFreight("3.0.0", "third")
	k.finished(k.promote("test", third.Name).Name)
	k.waitVerified(third.Name, "test")
	k.finished(k.promote("uat", third.Name).Name)
	vi = k.verification("uat", third.Name, kargoapi.VerificationPhaseRunning)
	av, err := s.api.AbortStageVerificationWithResponse(ctx, k.name, "uat")
	want(t, av, err, http.StatusOK)
	vi = k.verification("uat", third.Name, "")
	if vi.Phase != kargoapi.VerificationPhaseFailed || vi.Message != "Verification aborted by user" || vi.Actor == "" {
		t.Errorf("aborted verification: %s %q by %q", vi.Phase, vi.Message, vi.Actor)
	}
	eventually(t, 10*time.Second, "the aborted AnalysisRun ends", func() bool {
		return k.analysisRun(vi.AnalysisRun.Name).Status.Phase.Completed()
	})
	hits := svc.hits.Load()
	time.Sleep(2500 * time.Millisecond)
	if got := svc.hits.Load(); got != hits {
		t.Errorf("measured %d more times after the abort", got-hits)
	}
	if f := k.freight(third.Name); f.IsVerifiedIn("uat") {
		t.Errorf("aborted Freight is verified in uat")
	}
	// The outcomes are counted (the shared server's other tests may add).
	for _, phase := range []string{"Successful", "Failed"} {
		if n := scraped(t, s, fmt.Sprintf(`taskactions_analysis_runs_finished_total{phase=%q}`, phase)); n < 1 {
			t.Errorf("AnalysisRuns finished %s: %v, want at least 1", phase, n)
		}
	}
}

// scraped is the value of one series of the server's /metrics.
func scraped(t *testing.T, s *server, series string) float64 {
	t.Helper()
	resp, err := s.http.Get(s.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, line := range strings.Split(readAll(t, resp.Body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

// setTemplate points a Stage's verification at another template.
func setTemplate(t *testing.T, k *kproject, stage, template string) {
	t.Helper()
	for tries := 0; ; tries++ {
		s := k.stage(stage)
		s.Spec.Verification.AnalysisTemplates = []kargoapi.AnalysisTemplateReference{{Name: template}}
		r := k.call(func(ctx context.Context, c *client.ClientWithResponses) (generated, error) {
			return c.ReplaceStageWithResponse(ctx, k.name, stage, s)
		})
		if r.code == http.StatusConflict && tries < 10 {
			continue
		}
		into[kargoapi.Stage](t, r, http.StatusOK)
		return
	}
}

// runActions are the actions of an AnalysisRun's run, by name.
func (k *kproject) runActions(analysisRun string) map[string]client.Action {
	k.t.Helper()
	run := runner.RunOf(&rolloutsapi.AnalysisRun{ObjectMeta: metav1.ObjectMeta{Name: analysisRun, Namespace: k.name}})
	resp, err := k.s.api.ListRunActionsWithResponse(context.Background(), run.Project, run.Domain, run.Run, nil)
	if err != nil || resp.JSON200 == nil {
		k.t.Fatalf("actions of %s: %v", analysisRun, err)
	}
	out := map[string]client.Action{}
	for _, a := range resp.JSON200.Items {
		out[a.ActionId.Name] = a
	}
	return out
}

func phasesOf(acts map[string]client.Action) map[string]client.Phase {
	out := map[string]client.Phase{}
	for n, a := range acts {
		out[n] = a.Phase
	}
	return out
}
