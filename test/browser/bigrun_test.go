package browser

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"taskactions/pkg/client"
)

// maxRows is how many rows the run page may have in the DOM, whatever the
// run's size: a window of a viewport or two, plus the focused row.
const maxRows = 300

// rowCount is how many action rows are in the DOM.
const rowCount = `document.querySelectorAll('.row').length`

// TestBigRunVirtualized: a run of 5,000 actions puts only the rows in view
// in the DOM; scrolling to the end shows the last action; the keyboard
// goes to the first and last rows; "Find in run" jumps to an action deep
// in the tree, under collapsed parents, and selects it; a change to one
// child far out of view is in its row when scrolled to. It reads better
// whole: one page, the steps in the order a user takes them.
func TestBigRunVirtualized(t *testing.T) {
	const children = 4989 // + the root, 9 needles and the last: 5,000
	run := newRun()
	start := time.Now()
	enqueue(t, run, "root", "")
	enqueueMany(t, run, "root", children)
	needles := make([]string, 9)
	for i := range needles {
		needles[i] = fmt.Sprintf("needle-%d", i+1)
	}
	enqueueNames(t, run, "c2500", needles)
	// Last by the tree's order (creation time, to the second, then name).
	time.Sleep(1100 * time.Millisecond)
	enqueue(t, run, "zz-last", "root")
	t.Logf("enqueued 5000 actions in %v", time.Since(start).Round(time.Millisecond))

	p := newTab(t)
	start = time.Now()
	p.navigate(runPath(run))
	p.waitVisibleFor(`.row`, 60*time.Second)
	firstRow := time.Since(start)
	p.waitVisibleFor(`#conn[data-conn="live"]`, 30*time.Second)
	p.eventually("the count of the whole run", `document.getElementById('run-count').textContent === '5000 actions'`)
	t.Logf("first row %v after navigation (test's clock); in the page: %s", firstRow.Round(time.Millisecond), eval[string](p, `(() => {
		const at = (name) => { const e = performance.getEntriesByName(name)[0]; return e ? Math.round(e.startTime) + 'ms' : '-'; };
		const apply = performance.getEntriesByName('taskactions:snapshot')[0];
		return 'stream synced at ' + at('taskactions:synced') + ', snapshot applied to the model in ' + (apply ? Math.round(apply.duration) : '-') + 'ms, first rows in the DOM at ' + at('taskactions:first-rows') + ' (from navigation start)';
	})()`))

	checkRows := func(when string) {
		t.Helper()
		n := eval[int](p, rowCount)
		t.Logf("%s: %d rows in the DOM", when, n)
		if n == 0 || n > maxRows {
			t.Fatalf("%s: %d rows in the DOM, want 1..%d of the run's 5,000", when, n, maxRows)
		}
	}
	// The page asked for a window: the stream's snapshot was its first
	// 500 actions, painted at once, and the rest came from the run's list
	// in pages of 1,000, each handed to the tree in slices between which
	// the page takes input.
	if got := eval[[]int](p, `performance.getEntriesByName('taskactions:snapshot').map((e) => e.detail).concat(performance.getEntriesByName('taskactions:page').map((e) => e.detail))`); !slices.Equal(got, []int{500, 1000, 1000, 1000, 1000, 500}) {
		t.Errorf("the snapshot, then the pages: %v actions, want [500 1000 1000 1000 1000 500]", got)
	}
	checkRows("first view")
	if eval[bool](p, `!!document.querySelector('[data-action="c4321"]')`) {
		t.Fatal("c4321, thousands of rows down, is in the DOM at the first view")
	}

	// The end of the page is the end of the run.
	eval[bool](p, `(window.scrollTo(0, document.documentElement.scrollHeight), true)`)
	p.waitVisible(rowSel("zz-last", client.QUEUED))
	checkRows("scrolled to the end")

	// The keyboard: Home and End go to the first and last rows, which are
	// rendered where the page scrolls to.
	p.run(chromedp.Focus(chromedp.CSS(rowSel("zz-last", ""))), chromedp.KeyEvent(kb.Home))
	p.eventually("focus on the first row", `document.activeElement.dataset.action === 'root'`)
	p.run(chromedp.KeyEvent(kb.End))
	p.eventually("focus on the last row", `document.activeElement.dataset.action === 'zz-last'`)
	p.run(chromedp.KeyEvent(kb.ArrowUp))
	p.eventually("focus on the row before the last", `document.activeElement.getAttribute('aria-posinset') === '4989'`)

	// Find, with everything collapsed: the needle's parents open, and it is
	// selected and in view.
	p.run(chromedp.Click(chromedp.Search(`//button[normalize-space(.)="Collapse all"]`)))
	p.eventually("only the root shown", rowCount+` === 1`)
	p.run(chromedp.SendKeys(chromedp.CSS(`#find-q`), "needle-7"))
	p.eventually("one match counted", `document.getElementById('find-count').textContent === '1 match'`)
	p.run(chromedp.KeyEvent(kb.Enter))
	p.eventually("needle-7 in the detail panel", `document.getElementById('detail-title').textContent === 'needle-7'`)
	p.waitVisible(`[data-action="needle-7"][aria-selected="true"][aria-level="3"].match`)
	p.waitVisible(`[data-action="c2500"][aria-expanded="true"]`)
	if got := p.text(`#find-count`); got != "1 of 1" {
		t.Errorf("the find count reads %q after the jump, want \"1 of 1\"", got)
	}
	if !eval[bool](p, `(() => { const r = document.querySelector('[data-action="needle-7"]').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()`) {
		t.Error("needle-7 was selected but is not in the viewport")
	}
	checkRows("after find")
	needleY := eval[float64](p, `window.scrollY`)

	// A change to one child far below: not in the DOM until scrolled to,
	// and then with its new phase.
	if eval[bool](p, `!!document.querySelector('[data-action="c4321"]')`) {
		t.Fatal("c4321 is in the DOM while the page shows the rows around c2500")
	}
	setPhase(t, run, "c4321", 1, client.RUNNING)
	// About 100 steps of two frames each: 3.4 s on an idle machine, over
	// 15 s on CI's busy 2 cores. How long it takes is the frames', not
	// what this checks, so it gets a bound of its own.
	seen, err := evalErr[map[string]any](p, 2*time.Minute, `(async () => {
		const frame = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
		const t0 = performance.now();
		let most = 0;
		for (let i = 0; i < 1000; i++) {
			most = Math.max(most, document.querySelectorAll('.row').length);
			const row = document.querySelector('[data-action="c4321"]');
			if (row) {
				const r = row.getBoundingClientRect();
				if (r.top >= 0 && r.bottom <= innerHeight) return { found: true, steps: i, most, ms: Math.round(performance.now() - t0) };
			}
			if (innerHeight + scrollY >= document.documentElement.scrollHeight - 1) break;
			scrollBy(0, innerHeight * 0.8);
			await frame();
		}
		return { found: false, most };
	})()`)
	if err != nil {
		t.Fatalf("scrolling down to c4321: %v\npage: %s", err, p.describe())
	}
	t.Logf("scrolling down to c4321: %v", seen)
	if seen["found"] != true {
		t.Fatalf("scrolling down never showed c4321: %v", seen)
	}
	if most, _ := seen["most"].(float64); most > maxRows {
		t.Fatalf("up to %v rows in the DOM while scrolling, want at most %d", most, maxRows)
	}
	p.waitVisible(rowSel("c4321", client.RUNNING))

	// One change to a row in view, timed from the PUT's answer.
	setPhase(t, run, "c4321", 1, client.SUCCEEDED)
	put := time.Now()
	p.waitVisible(rowSel("c4321", client.SUCCEEDED))
	t.Logf("a row in view showed its change %v after the PUT returned (polling every 10ms or so)", time.Since(put).Round(time.Millisecond))

	// Back up to the needle: still selected, still in the panel.
	eval[bool](p, fmt.Sprintf(`(window.scrollTo(0, %f), true)`, needleY))
	p.waitVisible(`[data-action="needle-7"][aria-selected="true"]`)
	if got := p.text(`#detail-title`); got != "needle-7" {
		t.Errorf("after scrolling away and back the detail panel shows %q, want needle-7", got)
	}

	// Find by phase: the one action that succeeded, from anywhere.
	eval[bool](p, `(() => {
		const q = document.getElementById('find-q');
		q.value = '';
		q.dispatchEvent(new Event('input'));
		const phase = document.getElementById('find-phase');
		phase.value = 'SUCCEEDED';
		phase.dispatchEvent(new Event('change'));
		return true;
	})()`)
	p.eventually("one succeeded action counted", `document.getElementById('find-count').textContent === '1 match'`)
	p.run(chromedp.Click(chromedp.CSS(`#find-next`)))
	p.eventually("c4321 selected by phase", `document.getElementById('detail-title').textContent === 'c4321'`)
	if q := eval[string](p, `location.search`); q != "?phase=SUCCEEDED" {
		t.Errorf("the URL's query is %q, want ?phase=SUCCEEDED", q)
	}
	checkRows("at the end")
}

// enqueueNames enqueues children of parent with the names given, a few at
// a time.
func enqueueNames(t *testing.T, run client.RunIdentifier, parent string, names []string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, name := range names {
		wg.Go(func() {
			if err := tryEnqueue(run, name, parent); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
