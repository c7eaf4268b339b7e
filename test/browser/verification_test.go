package browser

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Kargo's verification of a Stage's current Freight on the dashboard: the
// pipeline node's verification badge and the Stage page's Verification
// section (the history, Reverify, Abort verification), against the real
// Stage controller, which verifies the Freight after each Promotion.

// createVerifyStage creates a Stage of Warehouse app, direct, with one
// echo step and the verification given (nil: none, so the Freight is
// verified at once).
func createVerifyStage(t *testing.T, project, name string, verification map[string]any) {
	t.Helper()
	spec := map[string]any{
		"requestedFreight":  []any{map[string]any{"origin": map[string]any{"kind": "Warehouse", "name": "app"}, "sources": map[string]any{"direct": true}}},
		"promotionTemplate": map[string]any{"spec": map[string]any{"steps": []any{map[string]any{"uses": "echo"}}}},
	}
	if verification != nil {
		spec["verification"] = verification
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"name": name}, "spec": spec})
	if code, out := stageAPI(t, http.MethodPost, "/projects/"+project+"/stages", b); code != http.StatusCreated {
		t.Fatalf("create stage %s: HTTP %d %s", name, code, out)
	}
}

// verificationsOf is the API's verification history of a Stage's current
// Freight, newest first: id:phase.
func verificationsOf(t *testing.T, project, stage string) []string {
	t.Helper()
	code, b := stageAPI(t, http.MethodGet, "/projects/"+project+"/stages/"+stage, nil)
	if code != http.StatusOK {
		t.Fatalf("get stage %s: HTTP %d %s", stage, code, b)
	}
	var s struct {
		Status struct {
			FreightHistory []struct {
				VerificationHistory []struct{ ID, Phase string } `json:"verificationHistory"`
			} `json:"freightHistory"`
		} `json:"status"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var out []string
	if len(s.Status.FreightHistory) > 0 {
		for _, v := range s.Status.FreightHistory[0].VerificationHistory {
			out = append(out, v.ID+":"+v.Phase)
		}
	}
	return out
}

// isRed: the element's colour (--dot) is the red of failures, not the
// blue of what runs.
func isRed(sel string) string {
	return fmt.Sprintf(`(() => {
		const v = (el, name) => getComputedStyle(el).getPropertyValue(name).trim();
		const el = document.querySelector(%q);
		return v(el, '--dot') === v(document.documentElement, '--red-dot') && v(el, '--dot') !== v(document.documentElement, '--blue-dot');
	})()`, sel)
}

func isGreen(sel string) string {
	return fmt.Sprintf(`(() => {
		const v = (el, name) => getComputedStyle(el).getPropertyValue(name).trim();
		return v(document.querySelector(%q), '--dot') === v(document.documentElement, '--green-dot');
	})()`, sel)
}

const verificationRows = `[...document.querySelectorAll('#verification-history > li')].map((li) => li.dataset.verification + ':' + li.dataset.phase)`

// A Stage verified by an AnalysisTemplate the project lacks: its
// verification ends in Error at once. The pipeline node shows it red with
// the message as its title; the Stage page lists it (Error, the message),
// offers Reverify and not Abort; Reverify makes a second verification,
// newest first. A Stage without spec.verification is verified at once:
// green, on the node and the page. A Stage without Freight has nothing
// to verify, and a refusal of the server (409) is shown as an error.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestVerificationPages(t *testing.T) {
	project := newStageProject()
	createVerifyStage(t, project, "test", map[string]any{"analysisTemplates": []any{map[string]any{"name": "missing"}}})
	createVerifyStage(t, project, "plain", nil)
	createVerifyStage(t, project, "fresh", nil)
	freight := createFreight(t, project, "app", "checked", "1.0.0")
	waitPromotion(t, project, promoteAPI(t, project, "test", freight), "Succeeded")
	waitPromotion(t, project, promoteAPI(t, project, "plain", freight), "Succeeded")

	// The pipeline: test's node, red, with the message.
	p := openPage(t, stagesPath(project))
	p.waitVisible(`#conn[data-conn="live"]`)
	badge := nodeSel("test") + `[data-verification="Error"] .sn-verif`
	p.waitVisibleFor(badge, 30*time.Second)
	if got := p.text(badge); got != "Verify error" {
		t.Errorf("test's verification reads %q, want Verify error", got)
	}
	title := eval[string](p, fmt.Sprintf(`document.querySelector(%q).title`, badge))
	if !strings.Contains(title, "Error") || !strings.Contains(title, "error building AnalysisRun") || !strings.Contains(title, "get analysis templates") {
		t.Errorf("test's verification title is %q, want the phase and the message", title)
	}
	if got := p.text(nodeSel("test") + ` .sn-verif-msg`); !strings.Contains(got, "error building AnalysisRun") {
		t.Errorf("test's verification for screen readers reads %q, want the message", got)
	}
	if !eval[bool](p, isRed(badge)) {
		t.Errorf("test's failed verification is not red: class %q", eval[string](p, fmt.Sprintf(`document.querySelector(%q).className`, badge)))
	}
	// The Stage's phase is not Verifying (blue) either: Verified is False.
	if got := eval[string](p, fmt.Sprintf(`document.querySelector(%q).dataset.phase`, nodeSel("test"))); got != "Failed" {
		t.Errorf("test's phase is %q, want Failed", got)
	}
	// plain: verified at once, green.
	ok := nodeSel("plain") + `[data-verification="Successful"] .sn-verif`
	p.waitVisibleFor(ok, 30*time.Second)
	if got := p.text(ok); got != "Verified" {
		t.Errorf("plain's verification reads %q, want Verified", got)
	}
	if !eval[bool](p, isGreen(ok)) {
		t.Error("plain's verification is not green")
	}
	// fresh: no Freight, no verification, no badge.
	p.waitVisible(nodeSel("fresh"))
	if eval[bool](p, fmt.Sprintf(`(() => { const n = document.querySelector(%q); return n.hasAttribute('data-verification') || !n.querySelector('.sn-verif').hidden; })()`, nodeSel("fresh"))) {
		t.Error("fresh, without Freight, shows a verification")
	}

	// The Stage page: the verification, Error, with its message.
	p.run(chromedp.Click(chromedp.CSS(nodeSel("test") + ` a`)))
	p.eventually("test's page", fmt.Sprintf(`location.pathname === %q`, stagesPath(project)+"/test"))
	p.waitVisible(`#conn[data-conn="live"]`)
	row := `#verification-history > li:first-child`
	p.waitVisible(row + `[data-phase="Error"]`)
	api := verificationsOf(t, project, "test")
	if len(api) != 1 {
		t.Fatalf("the API has the verifications %q, want 1", api)
	}
	if got := eval[[]string](p, verificationRows); len(got) != 1 || got[0] != api[0] {
		t.Errorf("the page lists %q, want %q", got, api)
	}
	if got := p.text(row + ` .badge`); got != "Error" {
		t.Errorf("the verification's phase reads %q, want Error", got)
	}
	if !eval[bool](p, isRed(row+` .badge`)) {
		t.Error("the verification's phase is not red")
	}
	if got := p.text(row + ` .verif-msg.bad`); !strings.Contains(got, "error building AnalysisRun") || !strings.Contains(got, "get analysis templates") {
		t.Errorf("the verification's message reads %q", got)
	}
	if got := p.text(row + ` .verif-meta`); !strings.Contains(got, "started") || !strings.Contains(got, "finished") {
		t.Errorf("the verification's times read %q", got)
	}
	p.waitVisible(`#reverify-stage:not([disabled]):not([aria-disabled])`)
	if !eval[bool](p, `document.getElementById('abort-verification').disabled`) {
		t.Error("Abort verification is enabled on a verification that has ended")
	}
	ax := accessibleNames(p)
	if !containsAll(ax["heading"], "Verification") || !containsAll(ax["button"], "Reverify", "Abort verification") {
		t.Errorf("accessibility tree: headings %q, buttons %q", ax["heading"], ax["button"])
	}

	// Reverify: a second verification, newest first, Error again; the
	// page shows no phase but Error meanwhile (nothing blue).
	eval[bool](p, `(() => {
		window.__vphases = new Set();
		const rec = () => document.querySelectorAll('#stage-verification .badge').forEach((b) => window.__vphases.add(b.className));
		new MutationObserver(rec).observe(document.getElementById('stage-verification'), { subtree: true, childList: true, attributes: true });
		return true;
	})()`)
	p.run(chromedp.Click(chromedp.CSS(`#reverify-stage`)))
	p.eventually("two verifications", `document.querySelectorAll('#verification-history > li').length === 2`)
	p.waitVisible(row + `[data-phase="Error"]`)
	api = verificationsOf(t, project, "test")
	if got := eval[[]string](p, verificationRows); len(api) != 2 || len(got) != 2 || got[0] != api[0] || got[1] != api[1] || api[1] != got[1] || !strings.HasSuffix(got[0], ":Error") {
		t.Errorf("after Reverify the page lists %q, the API %q: want the new Error first", got, api)
	}
	if got := p.text(`#verification-history > li:nth-child(2) .badge`); got != "Error" {
		t.Errorf("the first verification now reads %q", got)
	}
	if got := p.text(row + ` .verif-actor`); !strings.HasPrefix(got, "by ") || len(got) < 4 {
		t.Errorf("the reverification's actor reads %q, want who asked", got)
	}
	if got := p.text(`#verification-history > li:nth-child(2)`); strings.Contains(got, "current") {
		t.Errorf("the first verification still reads as the current one: %q", got)
	}
	p.waitVisible(`#reverify-stage:not([disabled]):not([aria-disabled])`)
	if !eval[bool](p, `document.getElementById('abort-verification').disabled`) {
		t.Error("Abort verification is enabled after the reverification ended")
	}
	if got := eval[[]string](p, `[...window.__vphases]`); len(got) == 0 || strings.Contains(strings.Join(got, " "), "vp-Running") || strings.Contains(strings.Join(got, " "), "vp-Pending") {
		t.Errorf("the verification badges shown meanwhile: %q, want Error only", got)
	}
	if eval[bool](p, `!document.getElementById('verification-error').hidden`) {
		t.Errorf("an error is shown: %q", p.text(`#verification-error`))
	}

	// plain's page: Successful, green; Reverify, not Abort.
	p.navigate(stagesPath(project) + "/plain")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisible(row + `[data-phase="Successful"]`)
	if !eval[bool](p, isGreen(row+` .badge`)) {
		t.Error("plain's verification is not green")
	}
	p.waitVisible(`#reverify-stage:not([disabled])`)
	if !eval[bool](p, `document.getElementById('abort-verification').disabled`) {
		t.Error("Abort verification is enabled on plain")
	}

	// fresh's page: nothing to verify, both buttons off. Were Reverify
	// clicked all the same (the page behind the server), the server's
	// refusal is shown, in its words.
	p.navigate(stagesPath(project) + "/fresh")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisible(`#verification-empty`)
	if !eval[bool](p, `document.getElementById('reverify-stage').disabled && document.getElementById('abort-verification').disabled`) {
		t.Error("a button is enabled on a Stage without Freight")
	}
	p.allowFailedRequest("/reverify")
	eval[bool](p, `(document.getElementById('reverify-stage').disabled = false, true)`)
	p.run(chromedp.Click(chromedp.CSS(`#reverify-stage`)))
	p.waitVisible(`#verification-error`)
	if got := p.text(`#verification-error`); !strings.Contains(got, "stage has no current freight") {
		t.Errorf("the refusal reads %q, want the problem's detail", got)
	}
	if !eval[bool](p, isRed(`#verification-error`)) {
		t.Error("the refusal is not shown as an error (red)")
	}
	p.eventually("Reverify off again", `document.getElementById('reverify-stage').disabled`)
}
