package browser

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// healthService is the loopback service a web metric asks: it answers
// {"status":"ok"} and counts the questions.
func healthService(t *testing.T) (url string, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"ok"}`)
	}))
	t.Cleanup(svc.Close)
	return svc.URL + "/health", hits
}

// createWebTemplate creates an AnalysisTemplate of one web metric,
// health, against url: count measurements a second apart, each passing
// when the service says ok.
func createWebTemplate(t *testing.T, project, name, url string, count int) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"metrics": []any{map[string]any{
			"name": "health", "count": count, "interval": "1s",
			"successCondition": "result == 'ok'",
			"provider":         map[string]any{"web": map[string]any{"url": url, "jsonPath": "{$.status}", "timeoutSeconds": 5}},
		}}},
	})
	if code, out := stageAPI(t, http.MethodPost, "/projects/"+project+"/analysis-templates", b); code != http.StatusCreated {
		t.Fatalf("create AnalysisTemplate %s: HTTP %d %s", name, code, out)
	}
}

// apiVerification is what the API says of a Stage's current
// verification.
type apiVerification struct {
	ID, Phase, Message string
	AnalysisRun        *struct{ Name string } `json:"analysisRun"`
}

// currentVerificationOf is the API's current verification of a Stage's
// current Freight (zero: none).
func currentVerificationOf(t *testing.T, project, stage string) apiVerification {
	t.Helper()
	code, b := stageAPI(t, http.MethodGet, "/projects/"+project+"/stages/"+stage, nil)
	if code != http.StatusOK {
		t.Fatalf("get stage %s: HTTP %d %s", stage, code, b)
	}
	var s struct {
		Status struct {
			FreightHistory []struct {
				VerificationHistory []apiVerification `json:"verificationHistory"`
			} `json:"freightHistory"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Status.FreightHistory) == 0 || len(s.Status.FreightHistory[0].VerificationHistory) == 0 {
		return apiVerification{}
	}
	return s.Status.FreightHistory[0].VerificationHistory[0]
}

// analysisRunPath is the page of an AnalysisRun's run, as the server
// names it: the lower-cased ULID of its name.
func analysisRunPath(project, analysisRun string) string {
	parts := strings.Split(analysisRun, ".")
	if len(parts) < 3 || len(parts[len(parts)-2]) != 26 {
		return "(not a Kargo AnalysisRun name: " + analysisRun + ")"
	}
	return "/projects/" + project + "/domains/analysis/runs/" + strings.ToLower(parts[len(parts)-2])
}

func isBlue(sel string) string {
	return fmt.Sprintf(`(() => {
		const v = (el, name) => getComputedStyle(el).getPropertyValue(name).trim();
		return v(document.querySelector(%q), '--dot') === v(document.documentElement, '--blue-dot');
	})()`, sel)
}

// Verifications by the server's AnalysisRun runner, for real: uat
// verifies its Freight with a web metric of 60 measurements against a
// loopback service the test controls, qa with one. uat's verification
// runs: blue on the pipeline and the Stage page, Abort enabled, Reverify
// not; its AnalysisRun links to the run of TaskActions, whose tree shows
// the root analysis running and the first measurement, health-1,
// succeeded. Abort verification from the page ends it Failed,
// "Verification aborted by user", red, Reverify enabled again, and the
// run ends. qa's verification passes while the pipeline is open: green,
// Verified, and Successful on its page.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestVerificationRunning(t *testing.T) {
	project := newStageProject()
	url, hits := healthService(t)
	createWebTemplate(t, project, "slow", url, 60)
	createWebTemplate(t, project, "quick", url, 1)
	createVerifyStage(t, project, "uat", map[string]any{"analysisTemplates": []any{map[string]any{"name": "slow"}}})
	createVerifyStage(t, project, "qa", map[string]any{"analysisTemplates": []any{map[string]any{"name": "quick"}}})
	freight := createFreight(t, project, "app", "measured", "1.0.0")
	waitPromotion(t, project, promoteAPI(t, project, "uat", freight), "Succeeded")

	// The pipeline: uat verifying, blue; qa, without Freight, no badge.
	p := openPage(t, stagesPath(project))
	p.waitVisible(`#conn[data-conn="live"]`)
	running := nodeSel("uat") + `[data-verification="Running"] .sn-verif`
	p.waitVisibleFor(running, 30*time.Second)
	if got := p.text(running); got != "Verifying" {
		t.Errorf("uat's verification reads %q, want Verifying", got)
	}
	if !eval[bool](p, isBlue(running)) {
		t.Error("uat's running verification is not blue")
	}
	if got := eval[string](p, fmt.Sprintf(`document.querySelector(%q).dataset.phase`, nodeSel("uat"))); got != "Verifying" {
		t.Errorf("uat's phase is %q, want Verifying", got)
	}
	p.waitVisible(nodeSel("qa"))
	if eval[bool](p, fmt.Sprintf(`document.querySelector(%q).hasAttribute('data-verification')`, nodeSel("qa"))) {
		t.Error("qa, without Freight, shows a verification")
	}

	// qa's verification, of one measurement, passes while the page looks:
	// green, Verified.
	waitPromotion(t, project, promoteAPI(t, project, "qa", freight), "Succeeded")
	verified := nodeSel("qa") + `[data-verification="Successful"] .sn-verif`
	p.waitVisibleFor(verified, 30*time.Second)
	if got := p.text(verified); got != "Verified" {
		t.Errorf("qa's verification reads %q, want Verified", got)
	}
	if !eval[bool](p, isGreen(verified)) {
		t.Error("qa's passed verification is not green")
	}

	// uat's page: the verification Running, blue, Abort and not Reverify,
	// and its AnalysisRun, the API's, linking to its run.
	p.run(chromedp.Click(chromedp.CSS(nodeSel("uat") + ` a`)))
	p.eventually("uat's page", fmt.Sprintf(`location.pathname === %q`, stagesPath(project)+"/uat"))
	p.waitVisible(`#conn[data-conn="live"]`)
	row := `#verification-history > li:first-child`
	p.waitVisible(row + `[data-phase="Running"]`)
	api := currentVerificationOf(t, project, "uat")
	if api.Phase != "Running" || api.AnalysisRun == nil || api.AnalysisRun.Name == "" {
		t.Fatalf("the API's current verification of uat: %+v, want Running with an AnalysisRun", api)
	}
	if got := eval[[]string](p, verificationRows); len(got) != 1 || got[0] != api.ID+":Running" {
		t.Errorf("the page lists %q, want %q", got, api.ID+":Running")
	}
	if got := p.text(row + ` .badge`); got != "Running" {
		t.Errorf("the verification's phase reads %q, want Running", got)
	}
	if !eval[bool](p, isBlue(row+` .badge`)) {
		t.Error("the running verification is not blue")
	}
	if eval[bool](p, `document.getElementById('abort-verification').disabled`) {
		t.Error("Abort verification is disabled on a running verification")
	}
	if !eval[bool](p, `document.getElementById('reverify-stage').disabled`) {
		t.Error("Reverify is enabled on a running verification")
	}
	link := row + ` .verif-run a`
	p.waitVisible(link)
	runPage := analysisRunPath(project, api.AnalysisRun.Name)
	if got := eval[string](p, fmt.Sprintf(`document.querySelector(%q).getAttribute('href')`, link)); got != runPage {
		t.Errorf("the AnalysisRun links to %q, want %q", got, runPage)
	}
	if got := p.text(link); got != api.AnalysisRun.Name {
		t.Errorf("the AnalysisRun link reads %q, want %q", got, api.AnalysisRun.Name)
	}

	// The run: the root analysis running, health-1 measured and passed.
	p.run(chromedp.Click(chromedp.CSS(link)))
	p.eventually("the AnalysisRun's run page", fmt.Sprintf(`location.pathname === %q`, runPage))
	p.waitVisible(rowSel("analysis", "RUNNING"))
	p.waitVisibleFor(rowSel("health-1", "SUCCEEDED"), 30*time.Second)
	if hits.Load() == 0 {
		t.Error("health-1 succeeded, but the service was never asked")
	}

	// Abort verification: Failed, aborted by user, red; Reverify again.
	p.navigate(stagesPath(project) + "/uat")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisible(row + `[data-phase="Running"]`)
	p.run(chromedp.Click(chromedp.CSS(`#abort-verification`)))
	p.waitVisibleFor(row+`[data-phase="Failed"]`, 30*time.Second)
	if got := p.text(row + ` .badge`); got != "Failed" {
		t.Errorf("the aborted verification's phase reads %q, want Failed", got)
	}
	if got := p.text(row + ` .verif-msg.bad`); got != "Verification aborted by user" {
		t.Errorf("the aborted verification's message reads %q", got)
	}
	if !eval[bool](p, isRed(row+` .badge`)) {
		t.Error("the aborted verification is not red")
	}
	if got := eval[[]string](p, verificationRows); len(got) != 1 || got[0] != api.ID+":Failed" {
		t.Errorf("after the abort the page lists %q, want %q", got, api.ID+":Failed")
	}
	if v := currentVerificationOf(t, project, "uat"); v.ID != api.ID || v.Phase != "Failed" || v.Message != "Verification aborted by user" {
		t.Errorf("the API's verification after the abort: %+v", v)
	}
	p.waitVisible(`#reverify-stage:not([disabled]):not([aria-disabled])`)
	if !eval[bool](p, `document.getElementById('abort-verification').disabled`) {
		t.Error("Abort verification is enabled on the aborted verification")
	}
	if eval[bool](p, `!document.getElementById('verification-error').hidden`) {
		t.Errorf("an error is shown: %q", p.text(`#verification-error`))
	}
	// The run stopped: Kargo's abort terminates the AnalysisRun, which
	// Rollouts then assesses on the measurements taken, all passed here:
	// Successful, "Run Terminated"; its root action succeeds.
	p.run(chromedp.Click(chromedp.CSS(link)))
	p.eventually("the AnalysisRun's run page", fmt.Sprintf(`location.pathname === %q`, runPage))
	p.waitVisibleFor(rowSel("analysis", "SUCCEEDED"), 30*time.Second)

	// qa's page: Successful, green, its own run; Reverify, not Abort.
	p.navigate(stagesPath(project) + "/qa")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisible(row + `[data-phase="Successful"]`)
	qa := currentVerificationOf(t, project, "qa")
	if qa.Phase != "Successful" || qa.AnalysisRun == nil {
		t.Fatalf("the API's current verification of qa: %+v", qa)
	}
	if got := p.text(row + ` .badge`); got != "Successful" {
		t.Errorf("qa's verification reads %q, want Successful", got)
	}
	if !eval[bool](p, isGreen(row+` .badge`)) {
		t.Error("qa's verification is not green")
	}
	p.waitVisible(link)
	if got, want := eval[string](p, fmt.Sprintf(`document.querySelector(%q).getAttribute('href')`, link)), analysisRunPath(project, qa.AnalysisRun.Name); got != want || want == runPage {
		t.Errorf("qa's AnalysisRun links to %q, want %q (not uat's)", got, want)
	}
	p.waitVisible(`#reverify-stage:not([disabled])`)
	if !eval[bool](p, `document.getElementById('abort-verification').disabled`) {
		t.Error("Abort verification is enabled on qa's passed verification")
	}
}

// What real verifications show only for a moment, or never: a Pending
// verification (blue, Abort enabled), an Inconclusive one (amber, ended),
// a failed one below the current, and the run of an AnalysisRun named
// otherwise than Kargo names them (a hash of the name, as the server
// names it); drawn by the page's module from made-up Stages.
func TestVerificationDrawn(t *testing.T) {
	p := openPage(t, "/")
	byHand := "by-hand-analysis"
	sum := sha256.Sum256([]byte(byHand))
	got := eval[map[string]any](p, fmt.Sprintf(`(async () => {
		const m = await import('/js/verification.js');
		const panel = new m.VerificationPanel({ project: 'proj', stage: 'test', onStage: () => {} });
		document.getElementById('main').append(panel.el);
		const stage = (phase) => ({
			metadata: { name: 'test', resourceVersion: '1' },
			spec: { promotionTemplate: { spec: { steps: [{ uses: 'echo' }] } } },
			status: { freightHistory: [{ id: 'fc1', items: { 'Warehouse/app': { name: 'f1' } }, verificationHistory: [
				{ id: 'v2', phase, startTime: '2025-01-01T00:00:00Z', analysisRun: { name: %q, namespace: 'proj', phase } },
				{ id: 'v1', phase: 'Failed', message: 'Verification aborted by user', startTime: '2024-12-31T00:00:00Z', finishTime: '2024-12-31T00:01:00Z' },
			] }] },
		});
		const v = (el, name) => getComputedStyle(el).getPropertyValue(name).trim();
		const dot = (sel, colour) => v(panel.el.querySelector(sel), '--dot') === v(document.documentElement, colour);
		panel.update(stage('Pending'));
		for (let i = 0; i < 200 && !panel.el.querySelector('li:first-child .verif-run a'); i++) await new Promise((r) => setTimeout(r, 10));
		const a = panel.el.querySelector('li:first-child .verif-run a');
		const out = {
			hashed: a ? a.getAttribute('href') : '',
			pending: panel.el.querySelector('li:first-child .badge').textContent,
			pendingBlue: dot('li:first-child .badge', '--blue-dot'),
			oldRed: dot('li:nth-child(2) .badge', '--red-dot'),
			pendingAbort: !panel.abort.disabled,
			pendingReverify: !panel.reverify.disabled,
		};
		panel.update(stage('Inconclusive'));
		out.amber = dot('li:first-child .badge', '--amber-dot');
		out.endedAbort = !panel.abort.disabled;
		out.endedReverify = !panel.reverify.disabled;
		panel.close();
		panel.el.remove();
		return out;
	})()`, byHand))
	want := map[string]any{
		"hashed":          "/projects/proj/domains/analysis/runs/a" + hex.EncodeToString(sum[:])[:25],
		"pending":         "Pending",
		"pendingBlue":     true,
		"oldRed":          true,
		"pendingAbort":    true,
		"pendingReverify": false,
		"amber":           true,
		"endedAbort":      false,
		"endedReverify":   true,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %v, want %v", k, got[k], w)
		}
	}
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
