package browser

import (
	"context"
	"fmt"
	"testing"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// countLive wraps, before any script of the page runs, EventSource and
// setInterval so that the test can count the streams open and the
// interval timers running: window.__live().
const countLive = `(() => {
	const streams = new Set();
	const timers = new Set();
	const ES = window.EventSource;
	window.EventSource = class extends ES {
		constructor(...args) { super(...args); streams.add(this); }
		close() { streams.delete(this); super.close(); }
	};
	const si = window.setInterval.bind(window);
	const ci = window.clearInterval.bind(window);
	window.setInterval = (...args) => { const id = si(...args); timers.add(id); return id; };
	window.clearInterval = (id) => { timers.delete(id); ci(id); };
	window.__live = () => ({
		streams: [...streams].filter((es) => es.readyState !== ES.CLOSED).map((es) => new URL(es.url).pathname),
		timers: timers.size,
	});
})()`

type liveCount struct {
	Streams []string `json:"streams"`
	Timers  int      `json:"timers"`
}

// Following links between the pages, and back, draws each page without
// loading the document again, and tears the one before down: what is
// left open is exactly what the page shown holds (its streams, its one
// ticking timer), never a stream or timer of a page gone.
func TestNavigationTearsPagesDown(t *testing.T) {
	project := newStageProject()
	createPromoStage(t, project, "uat", nil, pstepDef{uses: "echo", as: "say", config: map[string]any{"message": "hi"}})
	f := createFreight(t, project, "app", "nav", "1.0.0")
	name := promoteAPI(t, project, "uat", f)
	waitPromotion(t, project, name, "Succeeded")
	run := runOf(name)

	p := newTab(t)
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: countLive}); err != nil {
		t.Fatal(err)
	}
	p.navigate(promotionPath(project, name))
	eval[bool](p, `(window.__sameDocument = true)`)

	// at checks the page shown, once live, and what is left open.
	at := func(what, ready string, streams, timers int) {
		t.Helper()
		p.waitVisible(ready)
		p.waitVisible(`#conn[data-conn="live"]`)
		if !eval[bool](p, `window.__sameDocument === true`) {
			t.Fatalf("%s: the document was loaded again, not navigated in", what)
		}
		got := eval[liveCount](p, `window.__live()`)
		if len(got.Streams) != streams || got.Timers != timers {
			t.Errorf("%s: %d streams open %q and %d interval timers, want %d and %d", what, len(got.Streams), got.Streams, got.Timers, streams, timers)
		}
	}
	click := func(sel string) {
		t.Helper()
		p.waitVisible(sel)
		p.run(chromedp.Click(chromedp.CSS(sel)))
	}

	at("the promotion page", `#promotion-steps li[data-step="say"][data-status="Succeeded"]`, 2, 1)
	click(`#crumbs a[href$="/stages/uat"]`)
	at("the stage page", `#stage-promotions li[data-promotion]`, 2, 1)
	click(`#crumbs a[href$="/stages"]`)
	at("the stages page", nodeSel("uat"), 2, 1) // its Stages and its Warehouses
	click(nodeSel("uat") + ` a`)
	at("the stage page again", `#stage-promotions li[data-promotion]`, 2, 1)
	click(fmt.Sprintf(`#stage-promotions a[href$=%q]`, "/promotions/"+name))
	at("the promotion page again", `#promotion-run:not([hidden])`, 2, 1)
	click(`#promotion-run`)
	at("the run page", rowSel("step-1", ""), 1, 1)
	click(`#crumbs a[href$="/domains/kargo"]`)
	at("the runs page", fmt.Sprintf(`tr[data-run=%q]`, run), 1, 1)
	eval[bool](p, `(history.back(), true)`)
	at("back on the run page", rowSel("step-1", ""), 1, 1)
	click(`a.brand`)
	at("the home page", `#projects a`, 1, 0)
	eval[bool](p, `(history.back(), true)`)
	at("back on the run page again", rowSel("step-1", ""), 1, 1)
}
