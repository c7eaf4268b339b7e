package browser

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// 600 Stages (chains, fan-out from 3 Warehouses, fan-in, control-flow
// Stages): how long the page takes to show them; that one Stage's change
// touches only its node (no re-layout on a status change); how long a
// burst of 600 refreshes (two changes each) takes to show, paced by the
// controller, and then the same all at once (the page catching up after
// its stream was closed). The figures (times, long tasks, long frames)
// are logged, not judged: speed is measured by benchmarks, and this
// machine is shared (docs/performance.md, "The Stages page").
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

	// The controller paces that burst. A burst all at once: the page's
	// stream closed (as in the back-forward cache) while every Stage is
	// refreshed again; back, it resumes from its last event id and gets
	// the ~1,200 changes in one go.
	eval[bool](p, `(window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true })), true)`)
	refreshAll()
	waitStages(t, project, n, refreshed)
	want := listRV(t, project)
	eval[bool](p, `(window.__longTasks.length = 0, window.__frames.length = 0, true)`)
	start = time.Now()
	eval[bool](p, `(window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true })), true)`)
	pageShows(t, p, want)
	t.Logf("catch-up burst: the page showed all %d Stages' two changes %v after it came back; long tasks: %v; frames over 100ms: %q",
		n, time.Since(start).Round(time.Millisecond), eval[[]int](p, `window.__longTasks`), eval[[]string](p, `window.__frames`))
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
