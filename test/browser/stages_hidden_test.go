package browser

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

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
