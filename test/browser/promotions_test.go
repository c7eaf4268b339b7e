package browser

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Kargo's Promotions on the dashboard: Promote from the Stage page, the
// Stage's Promotions live, the Promotion page (its steps in order, live,
// and Abort), the Freight timeline, and Approve; against the real
// Promotion API, its streams, the orchestrator and the executor's echo and
// sleep plugins.

// pstepDef is a promotion step of a Stage made by these tests.
type pstepDef struct {
	uses, as string
	config   map[string]any
}

// createPromoStage creates a Stage of Warehouse app: direct, or from the
// upstream Stages; with the steps given.
func createPromoStage(t *testing.T, project, name string, upstream []string, steps ...pstepDef) {
	t.Helper()
	sources := map[string]any{"direct": len(upstream) == 0}
	if len(upstream) > 0 {
		sources["stages"] = upstream
	}
	var ss []any
	for _, s := range steps {
		m := map[string]any{"uses": s.uses}
		if s.as != "" {
			m["as"] = s.as
		}
		if s.config != nil {
			m["config"] = s.config
		}
		ss = append(ss, m)
	}
	b, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"requestedFreight":  []any{map[string]any{"origin": map[string]any{"kind": "Warehouse", "name": "app"}, "sources": sources}},
			"promotionTemplate": map[string]any{"spec": map[string]any{"steps": ss}},
		},
	})
	if code, out := stageAPI(t, http.MethodPost, "/projects/"+project+"/stages", b); code != http.StatusCreated {
		t.Fatalf("create stage %s: HTTP %d %s", name, code, out)
	}
}

// createFreight creates Freight of a Warehouse with one image; it returns
// the Freight's name.
func createFreight(t *testing.T, project, warehouse, alias, tag string) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{
		"origin": map[string]any{"kind": "Warehouse", "name": warehouse},
		"alias":  alias,
		"images": []any{map[string]any{"repoURL": "ghcr.io/example/" + warehouse, "tag": tag}},
	})
	code, out := stageAPI(t, http.MethodPost, "/projects/"+project+"/freight", b)
	if code != http.StatusCreated {
		t.Fatalf("create freight %s: HTTP %d %s", alias, code, out)
	}
	var f struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	if err := json.Unmarshal(out, &f); err != nil || f.Metadata.Name == "" {
		t.Fatalf("freight %s: %v %s", alias, err, out)
	}
	return f.Metadata.Name
}

// apiPromotion is what these tests read of a Promotion.
type apiPromotion struct {
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

func promoteAPI(t *testing.T, project, stage, freight string) string {
	t.Helper()
	code, out := stageAPI(t, http.MethodPost, "/projects/"+project+"/stages/"+stage+"/promotions", []byte(fmt.Sprintf(`{"freight":%q}`, freight)))
	if code != http.StatusCreated {
		t.Fatalf("promote %s to %s: HTTP %d %s", freight, stage, code, out)
	}
	var p apiPromotion
	_ = json.Unmarshal(out, &p)
	return p.Metadata.Name
}

func getPromotion(t *testing.T, project, name string) apiPromotion {
	t.Helper()
	code, out := stageAPI(t, http.MethodGet, "/projects/"+project+"/promotions/"+name, nil)
	if code != http.StatusOK {
		t.Fatalf("get promotion %s: HTTP %d %s", name, code, out)
	}
	var p apiPromotion
	_ = json.Unmarshal(out, &p)
	return p
}

// waitPromotion polls the API until the Promotion's phase is phase.
func waitPromotion(t *testing.T, project, name, phase string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p := getPromotion(t, project, name)
		if p.Status.Phase == phase {
			return
		}
		if time.Now().After(deadline) {
			_, pb := stageAPI(t, http.MethodGet, "/projects/"+project+"/promotions/"+name, nil)
			_, sb := stageAPI(t, http.MethodGet, "/projects/"+project+"/stages/"+strings.Split(name, ".")[0], nil)
			t.Fatalf("promotion %s is %q after a minute, want %s\npromotion: %s\nstage: %s", name, p.Status.Phase, phase, pb, sb)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runOf is a Promotion's run: the lowercased ULID of its name.
func runOf(name string) string {
	parts := strings.Split(name, ".")
	return strings.ToLower(parts[len(parts)-2])
}

func promotionPath(project, name string) string {
	return "/projects/" + project + "/promotions/" + name
}

// stepStatuses is the Promotion page's steps, in order: alias:status.
const stepStatuses = `[...document.querySelectorAll('#promotion-steps > li')].map((li) => li.dataset.step + ':' + li.dataset.status)`

// From the Stage page: Promote opens a dialog of the Freight available to
// the Stage; choosing one and confirming creates the Promotion, which
// shows in the Stage's list and goes Running then Succeeded, live; the
// Freight timeline then shows the Freight as current; the Promotion page
// shows every step Succeeded, in order, with its alias, attempts and
// outputs, and leads to the run's action tree. A refused Promotion shows
// Kargo's message in the dialog.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestPromotionPagesPromote(t *testing.T) {
	project := newStageProject()
	createPromoStage(t, project, "test", nil,
		pstepDef{uses: "echo", as: "prepare", config: map[string]any{"message": "hello"}},
		pstepDef{uses: "echo", as: "render"},
		pstepDef{uses: "sleep", as: "wait", config: map[string]any{"duration": "3s"}},
		pstepDef{uses: "echo", as: "publish"},
	)
	freight := createFreight(t, project, "app", "first-light", "1.2.3")
	other := createFreight(t, project, "other", "elsewhere", "9.9.9") // of an origin the Stage does not request

	p := openPage(t, stagesPath(project)+"/test")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisible(`#stage-promotions-empty`)
	p.waitVisible(`#freight-timeline-empty`)
	ax := accessibleNames(p)
	for _, want := range []string{"Promotions", "Freight timeline"} {
		if !slices.Contains(ax["heading"], want) {
			t.Errorf("accessibility tree: headings %q, want %q", ax["heading"], want)
		}
	}
	if !slices.Contains(ax["button"], "Promote") {
		t.Errorf("accessibility tree: buttons %q, want Promote", ax["button"])
	}

	// Every phase the list shows for a Promotion, in order.
	eval[bool](p, `(() => {
		window.__phases = [];
		const rec = () => {
			for (const li of document.querySelectorAll('#stage-promotions li[data-promotion]')) {
				const ph = li.querySelector('.badge').textContent;
				if (ph !== li.dataset.phase) window.__phases.push('mismatch ' + ph + '/' + li.dataset.phase);
				if (window.__phases[window.__phases.length - 1] !== ph) window.__phases.push(ph);
			}
		};
		new MutationObserver(rec).observe(document.getElementById('stage-detail'), { subtree: true, childList: true, attributes: true, characterData: true });
		return true;
	})()`)

	// A refused Promotion: Kargo's message, in the dialog, which stays open.
	p.allowFailedRequest("/promotions")
	p.run(chromedp.Click(chromedp.CSS(`#promote-stage`)))
	p.waitVisible(`dialog#promote-dialog[open]`)
	choice := fmt.Sprintf(`#promote-available li[data-freight=%q]`, freight)
	p.waitVisible(choice)
	if got := p.text(choice); !strings.Contains(got, "first-light") || !strings.Contains(got, freight[:7]) || !strings.Contains(got, "ghcr.io/example/app:1.2.3") {
		t.Errorf("the Freight in the dialog reads %q", got)
	}
	if n := eval[int](p, `document.querySelectorAll('#promote-available li').length`); n != 1 {
		t.Errorf("%d Freight offered, want 1 (not the other Warehouse's)", n)
	}
	eval[bool](p, fmt.Sprintf(`(() => { const r = document.querySelector(%q); r.value = %q; r.checked = true; return true; })()`, choice+` input`, other))
	p.run(chromedp.Click(chromedp.CSS(`#promote-confirm`)))
	p.waitVisible(`#promote-error`)
	if got := p.text(`#promote-error`); !strings.Contains(got, "is not available to Stage") {
		t.Errorf("the refusal reads %q, want Kargo's message", got)
	}
	p.run(chromedp.Click(chromedp.CSS(`#promote-cancel`)))
	p.eventually("the dialog closed", `!document.getElementById('promote-dialog').open`)

	// Promote, for real.
	p.run(chromedp.Click(chromedp.CSS(`#promote-stage`)))
	p.waitVisible(choice)
	if eval[bool](p, `!document.getElementById('promote-error').hidden`) {
		t.Error("the last refusal is still shown")
	}
	p.run(chromedp.Click(chromedp.CSS(choice + ` input`)))
	p.eventually("the Freight chosen", fmt.Sprintf(`document.querySelector(%q).checked`, choice+` input`))
	p.run(chromedp.Click(chromedp.CSS(`#promote-confirm`)))
	// Closed once the server said yes; a refusal stays in the dialog, and
	// is what a timeout then reports.
	p.eventually("the dialog closed", `!document.getElementById('promote-dialog').open || (() => {
		const e = document.getElementById('promote-error');
		if (!e.hidden) throw new Error('the dialog says: ' + e.textContent);
		return false;
	})()`)
	row := `#stage-promotions li[data-promotion]`
	p.waitVisible(row)
	name := eval[string](p, `document.querySelector('#stage-promotions li[data-promotion]').dataset.promotion`)
	if !strings.HasPrefix(name, "test.") || !strings.HasSuffix(name, "."+freight[:7]) {
		t.Fatalf("the promotion is named %q", name)
	}
	p.waitVisible(row + `[data-phase="Running"]`)
	p.waitVisibleFor(row+`[data-phase="Succeeded"]`, 45*time.Second)
	phases := eval[[]string](p, `window.__phases`)
	if i := slices.Index(phases, "Running"); i < 0 || phases[len(phases)-1] != "Succeeded" || slices.Index(phases, "Succeeded") < i {
		t.Errorf("the list showed the phases %q, want Running then Succeeded", phases)
	}
	if got := p.text(row); !strings.Contains(got, "Succeeded") || !strings.Contains(got, "first-light") || !strings.Contains(got, "started") || !strings.Contains(got, "finished") {
		t.Errorf("the promotion in the list reads %q", got)
	}

	// The Freight timeline: the Freight is current.
	cur := fmt.Sprintf(`#freight-timeline li[data-current="true"] [data-freight=%q]`, freight)
	p.waitVisible(cur)
	if got := p.text(`#freight-timeline li[data-current="true"]`); !strings.Contains(got, "Current") || !strings.Contains(got, "first-light") || !strings.Contains(got, "ghcr.io/example/app:1.2.3") {
		t.Errorf("the current Freight reads %q", got)
	}

	// The Promotion page.
	p.run(chromedp.Click(chromedp.CSS(row + ` a.pr-link`)))
	p.eventually("the promotion page", fmt.Sprintf(`location.pathname === %q`, promotionPath(project, name)))
	p.waitVisible(`#promotion-phase[data-phase="Succeeded"]`)
	p.waitVisible(`#conn[data-conn="live"]`)
	want := []string{"prepare:Succeeded", "render:Succeeded", "wait:Succeeded", "publish:Succeeded"}
	p.eventually("every step Succeeded, in order", fmt.Sprintf(`JSON.stringify(%s) === %q`, stepStatuses, mustJSON(want)))
	for i, alias := range []string{"prepare", "render", "wait", "publish"} {
		li := fmt.Sprintf(`#promotion-steps > li:nth-child(%d)`, i+1)
		if got := p.text(li + ` h3`); got != alias {
			t.Errorf("step %d is headed %q, want %q", i+1, got, alias)
		}
		if got := p.text(li + ` .badge`); got != "Succeeded" {
			t.Errorf("step %s reads %q, want Succeeded in words", alias, got)
		}
	}
	// Attempts from the step's action, outputs from status.state.
	p.eventually("the attempts", `document.querySelectorAll('#promotion-steps .pstep-attempts').length === 4`)
	if got := p.text(`#promotion-steps li[data-step="wait"] .pstep-attempts`); got != "attempt 1" {
		t.Errorf("the sleep step's attempts read %q", got)
	}
	if got := p.text(`#promotion-steps li[data-step="prepare"] .outputs`); !strings.Contains(got, `"inputUri"`) {
		t.Errorf("the echo step's outputs read %q", got)
	}
	if eval[bool](p, `!document.getElementById('abort-promotion').hidden`) {
		t.Error("Abort is offered on a finished promotion")
	}
	if got := p.text(`#promotion-freight`); !strings.Contains(got, "first-light") || !strings.Contains(got, "ghcr.io/example/app:1.2.3") {
		t.Errorf("the promotion's Freight reads %q", got)
	}
	ax = accessibleNames(p)
	if !slices.Contains(ax["heading"], "Steps") || !slices.Contains(ax["heading"], "wait") {
		t.Errorf("accessibility tree: headings %q", ax["heading"])
	}
	for _, n := range ax["button"] {
		if strings.TrimSpace(n) == "" {
			t.Errorf("accessibility tree: a button without a name (%q)", ax["button"])
		}
	}

	// The run: the full action tree.
	run := runOf(name)
	if got := eval[string](p, `document.getElementById('promotion-run').getAttribute('href')`); got != "/projects/"+project+"/domains/kargo/runs/"+run {
		t.Errorf("the run link is %q", got)
	}
	p.run(chromedp.Click(chromedp.CSS(`#promotion-run`)))
	p.waitVisible(rowSel("promotion", "SUCCEEDED"))
	p.waitVisible(rowSel("step-3", "SUCCEEDED"))
}

// A Promotion with a long sleep step, aborted from the Promotion page:
// the running step ends Aborted, the steps after it do not run, and the
// Promotion ends Aborted, live; the Stage's list says so too.
func TestPromotionPagesAbort(t *testing.T) {
	project := newStageProject()
	createPromoStage(t, project, "slow", nil,
		pstepDef{uses: "echo", as: "prepare"},
		pstepDef{uses: "sleep", as: "nap", config: map[string]any{"duration": "10m"}},
		pstepDef{uses: "echo", as: "publish"},
	)
	freight := createFreight(t, project, "app", "slow-one", "2.0.0")
	name := promoteAPI(t, project, "slow", freight)

	p := openPage(t, promotionPath(project, name))
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisibleFor(`#promotion-steps li[data-step="nap"][data-status="Running"]`, 30*time.Second)
	p.waitVisible(`#promotion-phase[data-phase="Running"]`)
	if got := p.text(`#promotion-phase`); got != "Running" {
		t.Errorf("the phase reads %q", got)
	}
	if got := eval[string](p, stepStatuses+`.join(' ')`); got != "prepare:Succeeded nap:Running publish:Pending" {
		t.Errorf("the steps read %q", got)
	}
	p.run(chromedp.Click(chromedp.CSS(`#abort-promotion`)))
	p.waitVisible(`dialog#abort-dialog[open]`)
	if got := p.text(`#abort-title`); !strings.Contains(got, name) {
		t.Errorf("the dialog asks %q", got)
	}
	p.run(chromedp.Click(chromedp.CSS(`#abort-confirm`)))
	p.waitVisibleFor(`#promotion-phase[data-phase="Aborted"]`, 30*time.Second)
	p.eventually("the steps after the abort", fmt.Sprintf(`JSON.stringify(%s) === %q`, stepStatuses, mustJSON([]string{"prepare:Succeeded", "nap:Aborted", "publish:Not run"})))
	p.eventually("Abort gone", `document.getElementById('abort-promotion').hidden`)
	if got := getPromotion(t, project, name).Status.Phase; got != "Aborted" {
		t.Errorf("the API says %q", got)
	}

	// The Stage's list, and its phase: its last Promotion ended without
	// Freight, which is Failed (red), not Verifying.
	p.navigate(stagesPath(project) + "/slow")
	p.waitVisible(fmt.Sprintf(`#stage-promotions li[data-promotion=%q][data-phase="Aborted"]`, name))
	p.waitVisible(`#freight-timeline-empty`)
	p.waitVisible(`#stage-phase[data-phase="Failed"]`)
	p.navigate(stagesPath(project))
	p.waitVisible(nodeSel("slow") + `[data-phase="Failed"]`)
}

// Freight not available to a Stage (not verified upstream) is offered for
// approval in the Promote dialog; approved, it can be promoted there.
func TestPromotionPagesApprove(t *testing.T) {
	project := newStageProject()
	createPromoStage(t, project, "dev", nil, pstepDef{uses: "echo"})
	createPromoStage(t, project, "prod", []string{"dev"}, pstepDef{uses: "echo"})
	freight := createFreight(t, project, "app", "hot-fix", "3.1.4")

	p := openPage(t, stagesPath(project)+"/prod")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisible(`#promote-stage:not([disabled])`)
	p.run(chromedp.Click(chromedp.CSS(`#promote-stage`)))
	p.waitVisible(`#promote-none`)
	item := fmt.Sprintf(`#promote-unavailable li[data-freight=%q]`, freight)
	p.waitVisible(item)
	if !eval[bool](p, `document.getElementById('promote-confirm').disabled`) {
		t.Error("Promote is enabled with no Freight to choose")
	}
	p.run(chromedp.Click(chromedp.CSS(item + ` button`)))
	p.waitVisible(fmt.Sprintf(`#promote-available li[data-freight=%q] input:checked`, freight))
	if got := p.text(`#promote-status`); !strings.Contains(got, "hot-fix") {
		t.Errorf("the approval reads %q", got)
	}
	code, out := stageAPI(t, http.MethodGet, "/projects/"+project+"/freight?availableTo=prod", nil)
	if code != http.StatusOK || !strings.Contains(string(out), freight) {
		t.Fatalf("after the approval the Freight available to prod: HTTP %d %s", code, out)
	}
	p.run(chromedp.Click(chromedp.CSS(`#promote-confirm`)))
	p.eventually("the dialog closed", `!document.getElementById('promote-dialog').open`)
	p.waitVisibleFor(`#stage-promotions li[data-promotion][data-phase="Succeeded"]`, 30*time.Second)
	p.waitVisible(fmt.Sprintf(`#freight-timeline li[data-current="true"] [data-freight=%q]`, freight))
}

// The Stage page (with its Promotions, the timeline and the dialog) and the
// Promotion page at a phone's width and a laptop's: nothing sticks out of
// the page sideways.
func TestPromotionPagesWidths(t *testing.T) {
	project := newStageProject()
	// (A Stage name of 29 characters or more makes Promotion names longer
	// than the 63 characters of an action's shortName: the server cannot
	// start their run. Not the dashboard's to test.)
	stage := "prod-eu-west-1"
	createPromoStage(t, project, stage, nil,
		pstepDef{uses: "echo", as: "a-step-with-a-rather-long-alias-to-wrap", config: map[string]any{"message": strings.Repeat("long ", 40)}},
		pstepDef{uses: "echo", as: "publish"},
	)
	f1 := createFreight(t, project, "app", "first", "1.0.0")
	n1 := promoteAPI(t, project, stage, f1)
	waitPromotion(t, project, n1, "Succeeded")
	f2 := createFreight(t, project, "app", "second", "1.0.1")
	n2 := promoteAPI(t, project, stage, f2)
	waitPromotion(t, project, n2, "Succeeded")

	p := newTab(t)
	for _, w := range layoutWidths {
		p.run(chromedp.EmulateViewport(w, 900))
		p.navigate(stagesPath(project) + "/" + stage)
		p.waitVisible(`#conn[data-conn="live"]`)
		p.waitVisible(fmt.Sprintf(`#stage-promotions li[data-promotion=%q]`, n2))
		p.waitVisible(fmt.Sprintf(`#freight-timeline li[data-current="true"] [data-freight=%q]`, f2))
		if n := eval[int](p, `document.querySelectorAll('#freight-timeline > li').length`); n != 2 {
			t.Errorf("at %dpx: %d entries in the Freight timeline, want 2", w, n)
		}
		if got := eval[[]string](p, `[...document.querySelectorAll('#stage-promotions li[data-promotion]')].map((li) => li.dataset.promotion)`); !slices.Equal(got, []string{n2, n1}) {
			t.Errorf("at %dpx: the promotions are listed %q, want the newest first", w, got)
		}
		if overflow := eval[int](p, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
			t.Errorf("stage page at %dpx: %dpx wider than the screen", w, overflow)
		}
		p.run(chromedp.Click(chromedp.CSS(`#promote-stage`)))
		p.waitVisible(fmt.Sprintf(`#promote-available li[data-freight=%q]`, f1))
		if overflow := eval[int](p, `(() => { const r = document.getElementById('promote-dialog').getBoundingClientRect(); return Math.max(r.right - window.innerWidth, -r.left, document.documentElement.scrollWidth - window.innerWidth); })()`); overflow > 0 {
			t.Errorf("promote dialog at %dpx: %dpx out of the screen", w, overflow)
		}
		p.run(chromedp.Click(chromedp.CSS(`#promote-cancel`)))

		p.navigate(promotionPath(project, n1))
		p.waitVisible(`#conn[data-conn="live"]`)
		p.waitVisible(`#promotion-steps li[data-step="publish"][data-status="Succeeded"]`)
		p.waitVisible(`#promotion-steps .outputs`)
		if overflow := eval[int](p, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
			t.Errorf("promotion page at %dpx: %dpx wider than the screen", w, overflow)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
