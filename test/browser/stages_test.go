package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"taskactions/test/testserver"
)

// The Kargo Stage pages: the project's pipeline (/projects/{p}/stages) and
// one Stage (/projects/{p}/stages/{s}), against the real Stage API, its
// streams and the embedded Stage controller.

// stage is what these tests read of a Stage.
type stage struct {
	Metadata struct {
		Name            string            `json:"name"`
		ResourceVersion string            `json:"resourceVersion"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Status struct {
		LastHandledRefresh string `json:"lastHandledRefresh"`
		Conditions         []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// stageDef is a Stage to create: its Warehouse, the Stages it takes
// Freight from (none: directly from the Warehouse), and whether it has
// promotion steps (without, it is a control-flow Stage).
type stageDef struct {
	name      string
	warehouse string
	upstream  []string
	plain     bool
}

func (d stageDef) json() []byte {
	sources := map[string]any{"direct": len(d.upstream) == 0}
	if len(d.upstream) > 0 {
		sources["stages"] = d.upstream
	}
	spec := map[string]any{
		"requestedFreight": []any{map[string]any{
			"origin":  map[string]any{"kind": "Warehouse", "name": d.warehouse},
			"sources": sources,
		}},
	}
	if !d.plain {
		spec["promotionTemplate"] = map[string]any{"spec": map[string]any{"steps": []any{
			map[string]any{"uses": "git-clone", "as": "clone"},
			map[string]any{"uses": "kustomize-set-image"},
			map[string]any{"uses": "argocd-update", "as": "sync"},
		}}}
	}
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "kargo.akuity.io/v1alpha1", "kind": "Stage",
		"metadata": map[string]any{"name": d.name}, "spec": spec,
	})
	return b
}

var (
	stageProjects atomic.Int64
	stageHTTPOnce sync.Once
	stageHTTP     *http.Client
)

// newStageProject names a project no other test uses.
func newStageProject() string {
	return fmt.Sprintf("kargo%d", stageProjects.Add(1))
}

// stageAPI makes a request of the API with the admin token (JSON body).
func stageAPI(t testing.TB, method, path string, body []byte) (int, []byte) {
	t.Helper()
	code, b, err := tryStageAPI(method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	return code, b
}

func tryStageAPI(method, path string, body []byte) (int, []byte, error) {
	stageHTTPOnce.Do(func() {
		token, err := testserver.AdminToken(srv.dataDir)
		if err != nil {
			panic(err)
		}
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.MaxIdleConnsPerHost = 32
		stageHTTP = &http.Client{Transport: testserver.Authorized(token, base), Timeout: time.Minute}
	})
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.url+"/api/v1"+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := stageHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func createStage(t testing.TB, project string, d stageDef) {
	t.Helper()
	if err := tryCreateStage(project, d); err != nil {
		t.Fatal(err)
	}
}

func tryCreateStage(project string, d stageDef) error {
	code, b, err := tryStageAPI(http.MethodPost, "/projects/"+project+"/stages", d.json())
	if err != nil {
		return err
	}
	if code != http.StatusCreated {
		return fmt.Errorf("create stage %s: HTTP %d %s", d.name, code, b)
	}
	return nil
}

// createStages creates Stages from 16 goroutines.
func createStages(t testing.TB, project string, defs []stageDef) {
	t.Helper()
	parallel(t, len(defs), func(i int) error { return tryCreateStage(project, defs[i]) })
}

// parallel runs f(0..n-1) on 16 goroutines; the first error fails the test.
func parallel(t testing.TB, n int, f func(i int) error) {
	t.Helper()
	next := atomic.Int64{}
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					first.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	wg.Wait()
	if err := first.Load(); err != nil {
		t.Fatal(*err)
	}
}

func getStage(t testing.TB, project, name string) (stage, map[string]any) {
	t.Helper()
	code, b := stageAPI(t, http.MethodGet, "/projects/"+project+"/stages/"+name, nil)
	if code != http.StatusOK {
		t.Fatalf("get stage %s: HTTP %d %s", name, code, b)
	}
	var s stage
	var raw map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(b, &raw)
	return s, raw
}

func listStages(t testing.TB, project string) []stage {
	t.Helper()
	code, b := stageAPI(t, http.MethodGet, "/projects/"+project+"/stages", nil)
	if code != http.StatusOK {
		t.Fatalf("list stages: HTTP %d %s", code, b)
	}
	var l struct{ Items []stage }
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// replaceStage reads a Stage, lets change edit it, and PUTs it back.
func replaceStage(t testing.TB, project, name string, change func(s map[string]any)) {
	t.Helper()
	_, raw := getStage(t, project, name)
	change(raw)
	delete(raw, "status")
	b, _ := json.Marshal(raw)
	if code, out := stageAPI(t, http.MethodPut, "/projects/"+project+"/stages/"+name, b); code != http.StatusOK {
		t.Fatalf("replace stage %s: HTTP %d %s", name, code, out)
	}
}

func stagesPath(project string) string { return "/projects/" + project + "/stages" }

func nodeSel(name string) string { return fmt.Sprintf(`#graph [data-stage=%q]`, name) }

func edgeSel(from, to string) string {
	return fmt.Sprintf(`#graph svg path[data-from=%q][data-to=%q]`, from, to)
}

// The pipeline, live: Stages created, changed (edges and not) and deleted
// through the API show without a reload; nodes sit in columns by depth,
// with Warehouses first; each shows Kargo's phase in words.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestStagesLive(t *testing.T) {
	project := newStageProject()
	createStages(t, project, []stageDef{
		{name: "dev", warehouse: "app"},
		{name: "test", warehouse: "app", upstream: []string{"dev"}},
		{name: "gate", warehouse: "app", upstream: []string{"test"}, plain: true},
		{name: "prod", warehouse: "app", upstream: []string{"gate"}},
		{name: "infra", warehouse: "infra"},
	})

	p := openPage(t, stagesPath(project))
	p.waitVisible(`#conn[data-conn="live"]`)
	for _, n := range []string{"dev", "test", "gate", "prod", "infra"} {
		p.waitVisible(nodeSel(n))
	}
	eval[bool](p, `window.__noReload = true`)
	for _, e := range [][2]string{{"w:app", "s:dev"}, {"s:dev", "s:test"}, {"s:test", "s:gate"}, {"s:gate", "s:prod"}, {"w:infra", "s:infra"}} {
		p.waitVisible(edgeSel(e[0], e[1]))
	}
	if n := eval[int](p, `document.querySelectorAll('#graph [data-warehouse]').length`); n != 2 {
		t.Errorf("%d warehouse nodes, want 2 (app, infra)", n)
	}
	// Columns by depth: each Stage right of what feeds it; app and infra
	// Stages at the same depth share a column.
	cols := eval[map[string]float64](p, `Object.fromEntries([...document.querySelectorAll('#graph [data-stage], #graph [data-warehouse]')]
		.map((el) => [el.dataset.stage || 'w:' + el.dataset.warehouse, el.getBoundingClientRect().left]))`)
	if !(cols["w:app"] < cols["dev"] && cols["dev"] < cols["test"] && cols["test"] < cols["gate"] && cols["gate"] < cols["prod"]) || cols["dev"] != cols["infra"] {
		t.Errorf("columns (left edges): %v", cols)
	}
	// The controller's conditions, read as Kargo's UI reads them: a Stage
	// without Freight is Verifying (Verified=Unknown); a control-flow Stage
	// is Ready, and drawn plainer. The phase is in words, not colour only.
	p.waitVisible(nodeSel("dev") + `[data-phase="Verifying"]`)
	p.waitVisible(nodeSel("gate") + `[data-phase="Ready"].control-flow`)
	if got := p.text(nodeSel("dev") + ` .badge`); got != "Verifying" {
		t.Errorf("dev's phase reads %q, want Verifying", got)
	}
	if got := p.text(nodeSel("dev") + ` .sn-freight`); !strings.Contains(got, "No freight") {
		t.Errorf("dev's freight reads %q, want No freight", got)
	}
	if got := p.text(nodeSel("dev") + ` .sn-promo`); !strings.Contains(got, "No promotions") {
		t.Errorf("dev's last promotion reads %q, want No promotions", got)
	}
	if got := eval[string](p, `document.querySelector('#stage-counts').textContent`); !strings.Contains(got, "ready") || !strings.Contains(got, "verifying") {
		t.Errorf("the phase counts read %q", got)
	}
	// What assistive technology gets: headings, a link per Stage named by
	// it, the scrolling graph as a named region.
	ax := accessibleNames(p)
	for _, n := range []string{"dev", "test", "gate", "prod", "infra"} {
		if !slices.Contains(ax["link"], n) {
			t.Errorf("accessibility tree: links %q, want one named %q", ax["link"], n)
		}
	}
	if !slices.Contains(ax["heading"], "Stages") || !slices.Contains(ax["heading"], "Pipeline") {
		t.Errorf("accessibility tree: headings %q", ax["heading"])
	}
	if !slices.Contains(ax["region"], "Pipeline graph (scrolls)") {
		t.Errorf("accessibility tree: regions %q", ax["region"])
	}

	// Created: qa, from dev, appears with its edge, one column right of dev.
	createStage(t, project, stageDef{name: "qa", warehouse: "app", upstream: []string{"dev"}})
	p.waitVisible(nodeSel("qa"))
	p.waitVisible(edgeSel("s:dev", "s:qa"))
	p.eventually("qa in test's column", `(() => {
		const x = (n) => document.querySelector('[data-stage="' + n + '"]').getBoundingClientRect().left;
		return x('qa') === x('test');
	})()`)

	// Changed, edges: prod also takes Freight from qa.
	replaceStage(t, project, "prod", func(s map[string]any) {
		rf := s["spec"].(map[string]any)["requestedFreight"].([]any)[0].(map[string]any)
		rf["sources"].(map[string]any)["stages"] = []any{"gate", "qa"}
	})
	p.waitVisible(edgeSel("s:qa", "s:prod"))
	// Changed, not edges: a colour (kargo.akuity.io/color) on infra.
	replaceStage(t, project, "infra", func(s map[string]any) {
		md := s["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
		}
		ann["kargo.akuity.io/color"] = "violet"
		md["annotations"] = ann
	})
	p.eventually("infra's colour", `document.querySelector('[data-stage="infra"]').style.getPropertyValue('--stage-color') === 'violet'`)

	// Deleted: qa goes, with its edges.
	if code, b := stageAPI(t, http.MethodDelete, "/projects/"+project+"/stages/qa", []byte(`{}`)); code != http.StatusNoContent {
		t.Fatalf("delete qa: HTTP %d %s", code, b)
	}
	p.waitGone(nodeSel("qa"))
	p.waitGone(edgeSel("s:dev", "s:qa"))
	p.waitGone(edgeSel("s:qa", "s:prod"))
	if !eval[bool](p, `window.__noReload === true`) {
		t.Fatal("the page was reloaded")
	}

	// A node is a link to its Stage's page.
	p.run(chromedp.Click(chromedp.CSS(nodeSel("test") + ` a`)))
	p.waitVisible(`#stage-detail`)
	if path := eval[string](p, `location.pathname`); path != stagesPath(project)+"/test" {
		t.Fatalf("test's node led to %s", path)
	}
}

// The Stage page: conditions, spec, Refresh with a spinner until the
// controller has handled it (lastHandledRefresh = the annotation), what
// assistive technology sees, and Delete through the confirmation dialog.
func TestStagesRefreshAndDelete(t *testing.T) {
	project := newStageProject()
	createStages(t, project, []stageDef{
		{name: "dev", warehouse: "app"},
		{name: "test", warehouse: "app", upstream: []string{"dev"}},
	})
	p := openPage(t, stagesPath(project)+"/test")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisible(`#stage-conditions tr[data-condition="Ready"]`)
	p.waitVisible(`#refresh-stage:not([disabled])`)
	if got := p.text(`#stage-steps`); !strings.Contains(got, "git-clone") || !strings.Contains(got, "clone") || !strings.Contains(got, "argocd-update") {
		t.Errorf("the steps read %q", got)
	}
	if got := p.text(`#stage-requests`); !strings.Contains(got, "app") || !strings.Contains(got, "dev") {
		t.Errorf("the requested freight reads %q", got)
	}
	ax := accessibleNames(p)
	for _, want := range []string{"Refresh", "Delete stage"} {
		if !slices.Contains(ax["button"], want) {
			t.Errorf("accessibility tree: buttons %q, want %q", ax["button"], want)
		}
	}
	for _, name := range ax["button"] {
		if strings.TrimSpace(name) == "" {
			t.Errorf("accessibility tree: a button without a name (%q)", ax["button"])
		}
	}
	if !slices.Contains(ax["heading"], "Conditions") || !slices.Contains(ax["heading"], "Promotion steps") {
		t.Errorf("accessibility tree: headings %q", ax["heading"])
	}

	// The spinner is on from the click (recorded, since the controller may
	// be quicker than a poll) until the refresh is handled.
	eval[bool](p, `(() => {
		window.__busy = [];
		const b = document.getElementById('refresh-stage');
		new MutationObserver(() => window.__busy.push(b.getAttribute('aria-busy'))).observe(b, { attributes: true, attributeFilter: ['aria-busy'] });
		return true;
	})()`)
	p.run(chromedp.Click(chromedp.CSS(`#refresh-stage`)))
	p.eventually("the spinner", `window.__busy.includes('true')`)
	p.waitVisible(`#refresh-stage[aria-busy="false"]:not([aria-disabled])`)
	if eval[bool](p, `!document.querySelector('#refresh-stage .spinner').hidden`) {
		t.Error("the spinner is still shown")
	}
	s, _ := getStage(t, project, "test")
	token := s.Metadata.Annotations["kargo.akuity.io/refresh"]
	if token == "" || s.Status.LastHandledRefresh != token {
		t.Fatalf("after Refresh the API has annotation %q, lastHandledRefresh %q", token, s.Status.LastHandledRefresh)
	}
	p.eventually("the handled refresh on the page", fmt.Sprintf(`document.getElementById('stage-last-refresh').dataset.value === %q`, token))
	if got := p.text(`#refresh-status`); !strings.Contains(got, "Refreshed") {
		t.Errorf("the refresh status reads %q", got)
	}

	// Delete: asks first, then the Stage is gone and the page is the pipeline.
	p.run(chromedp.Click(chromedp.CSS(`#delete-stage`)))
	p.waitVisible(`dialog#abort-dialog[open]`)
	p.run(chromedp.Click(chromedp.Search(`//dialog[@open]//button[contains(., "Delete stage")]`)))
	p.eventually("the pipeline page", fmt.Sprintf(`location.pathname === %q`, stagesPath(project)))
	p.waitVisible(nodeSel("dev"))
	if code, _ := stageAPI(t, http.MethodGet, "/projects/"+project+"/stages/test", nil); code != http.StatusNotFound {
		t.Errorf("the deleted stage: HTTP %d, want 404", code)
	}
	p.waitGone(nodeSel("test"))
}

// A tab that was hidden and frozen while Stages changed shows the current
// state when it comes back, without a reload (akuity/kargo #2094, #2384:
// Kargo's UI showed stale Stages then); so does a page back from the
// back-forward cache, which closed its stream meanwhile.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestStagesHiddenTab(t *testing.T) {
	project := newStageProject()
	createStages(t, project, []stageDef{
		{name: "dev", warehouse: "app"},
		{name: "test", warehouse: "app", upstream: []string{"dev"}},
		{name: "old", warehouse: "app"},
	})
	p := openPage(t, stagesPath(project))
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisible(nodeSel("old"))
	p.waitVisible(nodeSel("test"))
	eval[bool](p, `window.__noReload = true`)

	// Hidden (as the browser says when the tab goes to the background),
	// then frozen (as Chrome does to background tabs): no script runs.
	eval[bool](p, `(() => {
		window.__vis = 'hidden';
		Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => window.__vis });
		Object.defineProperty(document, 'hidden', { configurable: true, get: () => window.__vis === 'hidden' });
		document.dispatchEvent(new Event('visibilitychange'));
		return true;
	})()`)
	if _, err := chromedp.Call(p.ctx, cdppage.SetWebLifecycleState, cdppage.SetWebLifecycleStateParams{State: cdppage.SetWebLifecycleStateStateFrozen}); err != nil {
		t.Fatal(err)
	}
	createStage(t, project, stageDef{name: "prod", warehouse: "app", upstream: []string{"test"}})
	if code, b := stageAPI(t, http.MethodDelete, "/projects/"+project+"/stages/old", []byte(`{}`)); code != http.StatusNoContent {
		t.Fatalf("delete old: HTTP %d %s", code, b)
	}
	replaceStage(t, project, "dev", func(s map[string]any) {
		md := s["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
		}
		ann["kargo.akuity.io/color"] = "teal"
		md["annotations"] = ann
	})
	// Let the controller reconcile prod while the tab sleeps.
	waitStages(t, project, 3, func(s stage) bool { return s.Metadata.Name != "old" && len(s.Status.Conditions) > 0 })
	time.Sleep(time.Second)

	// Back: active and visible. The page shows what happened meanwhile,
	// within a moment (not after a timer or a reconnect backoff).
	if _, err := chromedp.Call(p.ctx, cdppage.SetWebLifecycleState, cdppage.SetWebLifecycleStateParams{State: cdppage.SetWebLifecycleStateStateActive}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	eval[bool](p, `(() => {
		window.__vis = 'visible';
		document.dispatchEvent(new Event('visibilitychange'));
		return true;
	})()`)
	current := fmt.Sprintf(`!!document.querySelector(%q) && !document.querySelector(%q) && !!document.querySelector(%q)
		&& document.querySelector(%q).style.getPropertyValue('--stage-color') === 'teal'`,
		nodeSel("prod")+`[data-phase="Verifying"]`, nodeSel("old"), edgeSel("s:test", "s:prod"), nodeSel("dev"))
	for !eval[bool](p, current) {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("3s after the tab came back it does not show the current state: %s", eval[string](p, fmt.Sprintf(`JSON.stringify({
				prod: document.querySelector(%q)?.dataset.phase, old: !!document.querySelector(%q), edge: !!document.querySelector(%q),
				color: document.querySelector(%q).style.getPropertyValue('--stage-color'), conn: document.getElementById('conn').dataset.conn })`,
				nodeSel("prod"), nodeSel("old"), edgeSel("s:test", "s:prod"), nodeSel("dev"))))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// (Headless Chromium runs no animation frames in a page thawed through
	// the protocol: the page got current through its timers, a worst case.)
	t.Logf("current %v after the tab came back (stream synced %d times: more than once means it reconnected)",
		time.Since(start).Round(time.Millisecond), eval[int](p, `performance.getEntriesByName('taskactions:synced').length`))
	p.waitVisible(`#conn[data-conn="live"]`)

	// The back-forward cache: the page closes its stream when it goes into
	// it (pagehide, persisted) and, back (pageshow), resumes from the last
	// event id and shows what changed meanwhile.
	eval[bool](p, `(window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true })), true)`)
	createStage(t, project, stageDef{name: "qa", warehouse: "app", upstream: []string{"dev"}})
	waitStages(t, project, 4, func(s stage) bool { return len(s.Status.Conditions) > 0 })
	time.Sleep(300 * time.Millisecond)
	if eval[bool](p, `!!document.querySelector('[data-stage="qa"]')`) {
		t.Fatal("qa showed while the page was in the back-forward cache: the stream was not closed")
	}
	start = time.Now()
	eval[bool](p, `(window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true })), true)`)
	for !eval[bool](p, fmt.Sprintf(`!!document.querySelector(%q) && !!document.querySelector(%q)`, nodeSel("qa")+`[data-phase="Verifying"]`, edgeSel("s:dev", "s:qa"))) {
		if time.Since(start) > 3*time.Second {
			t.Fatalf("3s after the page came back from the back-forward cache it does not show qa\npage: %s", p.describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("current %v after the page came back from the back-forward cache", time.Since(start).Round(time.Millisecond))
	p.waitVisible(`#conn[data-conn="live"]`)
	if !eval[bool](p, `window.__noReload === true`) {
		t.Fatal("the page was reloaded")
	}
}

// longTasks, installed before the page loads, records every long task
// (the main thread busy for over 50ms without a frame).
const longTasks = `window.__longTasks = [];
try {
	new PerformanceObserver((list) => {
		for (const e of list.getEntries()) window.__longTasks.push(Math.round(e.duration));
	}).observe({ type: 'longtask', buffered: true });
} catch (e) { window.__longTasks = null; }
// Long animation frames, for what a long task was (scripts, or style and layout).
window.__frames = [];
try {
	new PerformanceObserver((list) => {
		for (const e of list.getEntries()) {
			if (e.duration < 100) continue;
			const scripts = e.scripts.map((s) => (s.sourceFunctionName || s.invoker) + ' ' + Math.round(s.duration) + 'ms').join(', ');
			window.__frames.push(Math.round(e.startTime) + 'ms: ' + Math.round(e.duration) + 'ms, style+layout ' +
				Math.round(e.styleAndLayoutStart ? e.startTime + e.duration - e.styleAndLayoutStart : 0) + 'ms' + (scripts ? ', scripts: ' + scripts : ''));
		}
	}).observe({ type: 'long-animation-frame', buffered: true });
} catch (e) { /* not in this browser */ }
// The first render: when every node of the expected count is on the page.
window.__firstRender = 0;
window.__watchNodes = (n) => {
	const check = () => {
		if (document.querySelectorAll('#graph [data-stage]').length >= n && document.getElementById('graph').dataset.edges) {
			window.__firstRender = performance.now();
		} else {
			requestAnimationFrame(check);
		}
	};
	requestAnimationFrame(check);
};
document.addEventListener('DOMContentLoaded', () => {
	const n = Number(new URLSearchParams(location.search).get('expect') || 0);
	if (n) window.__watchNodes(n);
});`

// 600 Stages (chains, fan-out from 3 Warehouses, fan-in, control-flow
// Stages): how long the page takes to show them; that one Stage's change
// touches only its node (no re-layout on a status change); how long a
// burst of 600 refreshes (two changes each) takes to show, paced by the
// controller, and then the same all at once (the page catching up after
// its stream was closed); and that no long task exceeds 200ms meanwhile.
// The figures are logged.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestStagesManyStages(t *testing.T) {
	const chains, chainLen, fan = 30, 15, 150
	project := newStageProject()
	var defs []stageDef
	for i := range fan {
		defs = append(defs, stageDef{name: fmt.Sprintf("f%03d", i), warehouse: fmt.Sprintf("w%d", i%3)})
	}
	for k := range chains {
		for j := range chainLen {
			d := stageDef{name: fmt.Sprintf("c%02d-%02d", k, j), warehouse: fmt.Sprintf("w%d", k%3), plain: j == 10}
			if j > 0 {
				d.upstream = []string{fmt.Sprintf("c%02d-%02d", k, j-1)}
			}
			if j == 7 { // fan-in: also from a fan-out Stage of the same Warehouse
				d.upstream = append(d.upstream, fmt.Sprintf("f%03d", k%3+3*(k%50)))
			}
			defs = append(defs, d)
		}
	}
	n := len(defs)
	start := time.Now()
	createStages(t, project, defs)
	t.Logf("created %d stages in %v", n, time.Since(start).Round(time.Millisecond))
	// The controller reconciles each; then the project is quiet.
	waitStages(t, project, n, reconciled)

	p := newTab(t)
	if _, err := chromedp.Call(p.ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: longTasks}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	p.run(chromedp.Navigate(fmt.Sprintf("%s%s?expect=%d", srv.url, stagesPath(project), n)))
	p.eventually("every node", fmt.Sprintf(`document.querySelectorAll('#graph [data-stage]').length === %d`, n))
	wall := time.Since(start)
	p.waitVisibleFor(`#conn[data-conn="live"]`, 30*time.Second)
	p.eventually("the first render's time", `window.__firstRender > 0`)
	firstRender := eval[float64](p, `window.__firstRender`)
	if eval[bool](p, `window.__longTasks === null`) {
		t.Fatal("this browser has no longtask entries")
	}
	edges := eval[int](p, `Number(document.getElementById('graph').dataset.edges)`)
	if edges != fan+chains*chainLen+chains { // one per Stage, plus a second into each fan-in Stage
		t.Errorf("%d edges drawn, want %d", edges, fan+chains*chainLen+chains)
	}
	synced := eval[float64](p, `performance.getEntriesByName('taskactions:synced')[0].startTime`)
	loadTasks := eval[[]int](p, `window.__longTasks`)
	t.Logf("first render: all %d nodes on the page %.0fms after navigation start (%v by the test's clock); the stream's snapshot was in at %.0fms, the nodes %.0fms later; long tasks while loading: %v",
		n, firstRender, wall.Round(time.Millisecond), synced, firstRender-synced, loadTasks)
	t.Logf("frames over 100ms while loading: %q", eval[[]string](p, `window.__frames`))
	// This machine is shared: a load with a long task is measured again,
	// up to twice, before the page is judged; a page that blocks for 200ms
	// does so every time.
	for try := 2; slices.Max(append(loadTasks, 0)) > 200; try++ {
		if try > 3 {
			t.Errorf("a long task of %dms while loading, three times, want none over 200ms", slices.Max(loadTasks))
			break
		}
		t.Logf("a long task of %dms while loading; loading again", slices.Max(loadTasks))
		p.run(chromedp.Reload())
		p.eventually("every node, again", fmt.Sprintf(`document.querySelectorAll('#graph [data-stage]').length === %d`, n))
		p.waitVisibleFor(`#conn[data-conn="live"]`, 30*time.Second)
		loadTasks = eval[[]int](p, `window.__longTasks`)
		t.Logf("long tasks while loading (try %d): %v", try, loadTasks)
	}

	// One Stage's change touches its node only: no re-layout, no other node.
	pageShows(t, p, listRV(t, project))
	eval[bool](p, `(() => {
		window.__touched = new Set();
		new MutationObserver((records) => {
			for (const r of records) {
				const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
				const node = el.closest('[data-stage]');
				window.__touched.add(node ? node.dataset.stage : '(' + (el.id || el.tagName) + ')');
			}
		}).observe(document.getElementById('graph'), { subtree: true, childList: true, attributes: true, characterData: true });
		return true;
	})()`)
	target := "c05-07"
	if code, b := stageAPI(t, http.MethodPost, "/projects/"+project+"/stages/"+target+"/refresh?wait=true", []byte(`{}`)); code != http.StatusOK {
		t.Fatalf("refresh %s: HTTP %d %s", target, code, b)
	}
	rv := listRV(t, project)[target]
	p.eventually(target+" refreshed on the page", fmt.Sprintf(`Number(document.querySelector(%q).dataset.rv) >= %d`, nodeSel(target), rv))
	touched := eval[[]string](p, `(async () => { await new Promise((r) => setTimeout(r, 300)); return [...window.__touched]; })()`)
	if len(touched) != 1 || touched[0] != target {
		t.Errorf("a refresh of %s touched %v, want only its node", target, touched)
	}

	// The burst: every Stage refreshed at once (the annotation, then the
	// controller's status: two changes each), from 16 goroutines.
	eval[bool](p, `(window.__longTasks.length = 0, window.__frames.length = 0, true)`)
	names := make([]string, n)
	for i, d := range defs {
		names[i] = d.name
	}
	refreshAll := func() {
		parallel(t, n, func(i int) error {
			code, b, err := tryStageAPI(http.MethodPost, "/projects/"+project+"/stages/"+names[i]+"/refresh", []byte(`{}`))
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("refresh %s: HTTP %d %s", names[i], code, b)
			}
			return err
		})
	}
	start = time.Now()
	refreshAll()
	sent := time.Since(start)
	waitStages(t, project, n, refreshed)
	serverDone := time.Since(start)
	pageShows(t, p, listRV(t, project))
	pageDone := time.Since(start)
	lt := eval[[]int](p, `window.__longTasks`)
	longest := 0
	for _, d := range lt {
		longest = max(longest, d)
	}
	t.Logf("burst: %d refreshes sent in %v; the controller had handled all %v after the first; the page showed all %v after the first (%v after the server)",
		n, sent.Round(time.Millisecond), serverDone.Round(time.Millisecond), pageDone.Round(time.Millisecond), (pageDone - serverDone).Round(time.Millisecond))
	t.Logf("long tasks during the burst: %d, longest %dms (%v); frames over 100ms: %q", len(lt), longest, lt, eval[[]string](p, `window.__frames`))
	if longest > 200 {
		t.Errorf("a long task of %dms during the burst, want none over 200ms", longest)
	}

	// The controller paces that burst. A burst all at once: the page's
	// stream closed (as in the back-forward cache) while every Stage is
	// refreshed again; back, it resumes from its last event id and gets
	// the ~1,200 changes in one go.
	catchUpBurst := func() int {
		eval[bool](p, `(window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true })), true)`)
		refreshAll()
		waitStages(t, project, n, refreshed)
		want := listRV(t, project)
		eval[bool](p, `(window.__longTasks.length = 0, window.__frames.length = 0, true)`)
		start := time.Now()
		eval[bool](p, `(window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true })), true)`)
		pageShows(t, p, want)
		catchUp := time.Since(start)
		lt := eval[[]int](p, `window.__longTasks`)
		t.Logf("catch-up burst: the page showed all %d Stages' two changes %v after it came back; long tasks: %v; frames over 100ms: %q",
			n, catchUp.Round(time.Millisecond), lt, eval[[]string](p, `window.__frames`))
		return slices.Max(append(lt, 0))
	}
	// As while loading, more bursts tell the page from the machine: a
	// page that blocks for 200ms does so every time.
	for try := 1; ; try++ {
		longest := catchUpBurst()
		if longest <= 200 {
			break
		}
		if try == 3 {
			t.Errorf("a long task of %dms during the catch-up, three times, want none over 200ms", longest)
			break
		}
		t.Logf("a long task of %dms during the catch-up; once more", longest)
	}
}

// refreshed: the Stage's last refresh is handled.
func refreshed(s stage) bool {
	tok := s.Metadata.Annotations["kargo.akuity.io/refresh"]
	return tok != "" && s.Status.LastHandledRefresh == tok
}

// waitStages polls the list until it has n Stages that all satisfy ok.
func waitStages(t *testing.T, project string, n int, ok func(stage) bool) []stage {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		items := listStages(t, project)
		good := len(items) == n
		for _, s := range items {
			good = good && ok(s)
		}
		if good {
			return items
		}
		if time.Now().After(deadline) {
			done := 0
			for _, s := range items {
				if ok(s) {
					done++
				}
			}
			t.Fatalf("after 2 minutes %d of %d stages are as expected (%d listed)", done, n, len(items))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reconciled: the controller has reconciled the Stage and is done with it.
func reconciled(s stage) bool {
	ready := false
	for _, c := range s.Status.Conditions {
		ready = ready || c.Type == "Ready"
		if c.Type == "Reconciling" && c.Status == "True" {
			return false
		}
	}
	return ready
}

// pageShows waits until every node on the page shows at least the
// resource version given for its Stage, with no refresh pending.
func pageShows(t *testing.T, p *page, rv map[string]int64) {
	t.Helper()
	b, _ := json.Marshal(rv)
	p.eventually("the page to show every Stage's version", fmt.Sprintf(`(() => {
		const want = %s;
		for (const el of document.querySelectorAll('#graph [data-stage]')) {
			if (Number(el.dataset.rv) < want[el.dataset.stage]) return false;
			if (!el.querySelector('.sn-refresh').hidden) return false;
		}
		return true;
	})()`, b))
}

// listRV is each Stage's resource version.
func listRV(t *testing.T, project string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, s := range listStages(t, project) {
		v, err := strconv.ParseInt(s.Metadata.ResourceVersion, 10, 64)
		if err != nil {
			t.Fatalf("resource version %q of %s is not a number", s.Metadata.ResourceVersion, s.Metadata.Name)
		}
		out[s.Metadata.Name] = v
	}
	return out
}

// The pages at phone to desktop widths: nothing sticks out of the page
// sideways (the graph scrolls inside its box), and the Stage page stacks
// its columns when narrow.
func TestStagesWidths(t *testing.T) {
	project := newStageProject()
	createStages(t, project, []stageDef{
		{name: "dev", warehouse: "app"},
		{name: "test", warehouse: "app", upstream: []string{"dev"}},
		{name: "gate", warehouse: "app", upstream: []string{"test"}, plain: true},
		{name: "prod-eu-west-1", warehouse: "app", upstream: []string{"gate"}},
		{name: "prod-us-east-1", warehouse: "app", upstream: []string{"gate"}},
	})
	p := newTab(t)
	for _, w := range layoutWidths {
		p.run(chromedp.EmulateViewport(w, 900))
		p.navigate(stagesPath(project))
		p.waitVisible(`#conn[data-conn="live"]`)
		p.waitVisible(nodeSel("prod-us-east-1"))
		if overflow := eval[int](p, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
			t.Errorf("pipeline at %dpx: %dpx wider than the screen", w, overflow)
		}
		// 5 columns need 1,500px: the graph scrolls in its box on a phone,
		// and fits a wide screen.
		scrolls := eval[bool](p, `(() => { const s = document.querySelector('.pipeline'); return s.scrollWidth > s.clientWidth; })()`)
		if (w == 360 && !scrolls) || (w == 1920 && scrolls) {
			t.Errorf("pipeline at %dpx: the graph scrolls sideways: %v", w, scrolls)
		}

		p.navigate(stagesPath(project) + "/prod-eu-west-1")
		p.waitVisible(`#conn[data-conn="live"]`)
		p.waitVisible(`#stage-conditions`)
		if overflow := eval[int](p, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
			t.Errorf("stage page at %dpx: %dpx wider than the screen", w, overflow)
		}
		stacked := eval[bool](p, `(() => {
			const a = document.querySelector('.side-col').getBoundingClientRect();
			const b = document.querySelector('.main-col').getBoundingClientRect();
			return a.bottom <= b.top;
		})()`)
		if stacked != (w <= 1040) {
			t.Errorf("stage page at %dpx: columns stacked %v", w, stacked)
		}
	}
	p.run(chromedp.EmulateViewport(360, 900))
	p.navigate("/")
	if overflow := eval[int](p, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		t.Errorf("home at 360px: %dpx wider than the screen", overflow)
	}
}

// The home page opens a project's Stages.
func TestStagesFromHome(t *testing.T) {
	project := newStageProject()
	createStage(t, project, stageDef{name: "dev", warehouse: "app"})
	p := openPage(t, "/")
	eval[bool](p, `(document.getElementById('stages-project').value = '', true)`)
	p.run(
		chromedp.SendKeys(chromedp.CSS(`#stages-project`), project),
		chromedp.Click(chromedp.Search(`//button[normalize-space(.)="Open stages"]`)),
	)
	p.eventually("the pipeline page", fmt.Sprintf(`location.pathname === %q`, stagesPath(project)))
	p.waitVisible(nodeSel("dev"))
}
