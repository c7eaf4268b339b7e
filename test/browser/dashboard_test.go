package browser

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"taskactions/pkg/client"
)

var updateScreenshot = flag.Bool("update-screenshot", false, "write the run page's screenshot to docs/dashboard.png")

// The run page end to end: live updates without reload, a new child,
// keyboard selection, what assistive technology sees, abort of an action
// through the confirmation dialog, recovery after a server restart on the
// same data dir and port, and abort of the whole run.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestRunPageLive(t *testing.T) {
	run := newRun()
	enqueue(t, run, "a0", "")
	enqueue(t, run, "b1", "a0")

	p := openPage(t, runPath(run))
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisible(rowSel("a0", client.QUEUED))
	p.waitVisible(rowSel("b1", client.QUEUED))
	// A mark on the window: a reload would lose it.
	eval[bool](p, `window.__noReload = true`)

	// A status change through the API shows in the row.
	setPhase(t, run, "a0", 1, client.RUNNING)
	p.waitVisible(rowSel("a0", client.RUNNING))

	// A new child appears under its parent, one level down, after its
	// sibling: the rows are a flat list, the tree is in their ARIA.
	enqueue(t, run, "c2", "a0")
	p.waitVisible(`[data-action="a0"][aria-expanded="true"] ~ [data-action="b1"][aria-level="2"][aria-posinset="1"][aria-setsize="2"] ~ [data-action="c2"][aria-level="2"][aria-posinset="2"][aria-setsize="2"]`)

	// Keyboard: rows are focusable, arrows move, Enter selects.
	p.run(chromedp.Focus(chromedp.CSS(rowSel("a0", ""))), chromedp.KeyEvent(kb.ArrowDown))
	p.eventually("focus on b1", `document.activeElement.dataset.action === 'b1'`)
	p.run(chromedp.KeyEvent(kb.Enter))
	p.eventually("b1 in the detail panel", `document.getElementById('detail-title').textContent === 'b1'`)
	p.run(chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(" "))
	p.eventually("c2 selected with Space", `document.querySelector('[data-action="c2"]').getAttribute('aria-selected') === 'true'`)

	// The detail panel follows the selected action live: its timeline grows.
	setPhase(t, run, "c2", 1, client.RUNNING)
	p.waitVisible(rowSel("c2", client.RUNNING))
	p.eventually("c2's timeline", `[...document.querySelectorAll('#detail .timeline li')].map((li) => li.textContent).join('|').includes('Running')`)

	// What assistive technology sees: one named treeitem per action, named
	// buttons, and the abort controls are buttons named "Abort ...".
	ax := accessibleNames(p)
	t.Logf("treeitems as assistive technology names them: %q", ax["treeitem"])
	if got := len(ax["treeitem"]); got != 3 {
		t.Errorf("accessibility tree: %d treeitems %q, want 3", got, ax["treeitem"])
	}
	for _, name := range append(ax["button"], ax["treeitem"]...) {
		if strings.TrimSpace(name) == "" {
			t.Errorf("accessibility tree: a button or treeitem without a name (buttons %q)", ax["button"])
		}
	}
	if !slices.Contains(ax["button"], "Abort run") || !slices.Contains(ax["button"], "Abort action") {
		t.Errorf("accessibility tree: buttons %q, want \"Abort run\" and \"Abort action\"", ax["button"])
	}

	// Abort from the page: the button, the dialog, a reason, confirm.
	const reason = "stopped from the dashboard test"
	p.run(chromedp.Click(chromedp.Search(`//aside[@id="detail"]//button[contains(., "Abort")]`)))
	p.waitVisible(`dialog#abort-dialog[open]`)
	if ax := accessibleNames(p); !slices.Contains(ax["textbox"], "Reason (optional)") {
		t.Errorf("the dialog's reason field is named %q, want \"Reason (optional)\"", ax["textbox"])
	}
	p.run(chromedp.SendKeys(chromedp.CSS(`#abort-reason`), reason),
		chromedp.Click(chromedp.Search(`//dialog[@open]//button[contains(., "Abort")]`)))
	p.waitGone(`dialog#abort-dialog[open]`)
	p.waitVisible(rowSel("c2", client.ABORTED))
	got := awaitAction(t, run, "c2", client.ABORTED)
	if got.Phase != client.ABORTED || got.AbortReason == nil || *got.AbortReason != reason {
		t.Fatalf("after the abort from the page, the API has c2 %s with reason %v, want ABORTED with %q", got.Phase, got.AbortReason, reason)
	}
	p.eventually("the reason in the detail panel", fmt.Sprintf(`document.getElementById('detail').textContent.includes(%q)`, reason))
	// Only c2's subtree: its parent runs on.
	if a0 := getAction(t, run, "a0"); a0.Phase != client.RUNNING {
		t.Fatalf("aborting c2 left a0 %s, want RUNNING", a0.Phase)
	}

	// Restart the server. While it is down the page says so; once it is
	// back, the stream resumes (reset and snapshot) and the page is live
	// again with no reload, and shows changes made after the restart.
	p.restarting.Store(true)
	restartServer(t, func() {
		p.waitVisible(`#conn[data-conn="reconnecting"]`)
	})
	p.waitVisibleFor(`#conn[data-conn="live"]`, 45*time.Second)
	p.restarting.Store(false)
	setPhase(t, run, "b1", 1, client.SUCCEEDED)
	p.waitVisible(rowSel("b1", client.SUCCEEDED))
	p.waitVisible(rowSel("a0", client.RUNNING))
	p.waitVisible(rowSel("c2", client.ABORTED))
	rows := eval[int](p, `document.querySelectorAll('[data-action]').length`)
	kept := eval[bool](p, `window.__noReload === true`)
	if rows != 3 || !kept {
		t.Fatalf("after the restart: %d rows (want 3), page kept (not reloaded): %v", rows, kept)
	}

	// Abort the whole run, without a reason: what has not finished ends
	// ABORTED, and the button is then off.
	p.run(chromedp.Click(chromedp.Search(`//button[contains(., "Abort run")]`)))
	p.waitVisible(`dialog#abort-dialog[open]`)
	p.run(chromedp.Click(chromedp.Search(`//dialog[@open]//button[contains(., "Abort")]`)))
	p.waitGone(`dialog#abort-dialog[open]`)
	p.waitVisible(rowSel("a0", client.ABORTED))
	p.waitVisible(`#abort-run:disabled`)
	if a0 := awaitAction(t, run, "a0", client.ABORTED); a0.Phase != client.ABORTED {
		t.Fatalf("after Abort run the API has a0 %s, want ABORTED", a0.Phase)
	}
	if b1 := awaitAction(t, run, "b1", client.SUCCEEDED); b1.Phase != client.SUCCEEDED {
		t.Fatalf("Abort run changed the finished b1 to %s", b1.Phase)
	}
}

// A refused abort keeps the dialog open and shows the problem's detail.
// The browser's request is answered here with a problem document, as the
// server would answer a conflict.
func TestAbortShowsProblem(t *testing.T) {
	run := newRun()
	enqueue(t, run, "a0", "")
	setPhase(t, run, "a0", 1, client.RUNNING)
	p := openPage(t, runPath(run)+"#action=a0")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.eventually("a0 in the detail panel", `document.getElementById('detail-title').textContent === 'a0'`)

	const detail = "action web-test/dev/r/a0 is being aborted by someone else"
	p.allowFailedRequest("/abort")
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/abort"}}}); err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		for ev, err := range paused {
			if err == nil {
				_, err = chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{
					RequestID:       ev.RequestID,
					ResponseCode:    409,
					ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/problem+json"}},
					Body:            []byte(`{"type":"about:blank","title":"Conflict","status":409,"detail":"` + detail + `"}`),
				})
			}
			answered <- err
			return
		}
	}()

	p.run(chromedp.Click(chromedp.Search(`//aside[@id="detail"]//button[contains(., "Abort")]`)))
	p.waitVisible(`dialog#abort-dialog[open]`)
	p.run(chromedp.Click(chromedp.Search(`//dialog[@open]//button[contains(., "Abort")]`)))
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the page sent no abort request")
	}
	p.waitVisible(`#abort-error`)
	if got := p.text(`#abort-error`); !strings.Contains(got, detail) {
		t.Fatalf("the dialog shows %q, want the problem's detail %q", got, detail)
	}
	p.waitVisible(`dialog#abort-dialog[open]`)

	// Cancel closes it, and the keyboard is back on the button that opened it.
	p.run(chromedp.Click(chromedp.CSS(`#abort-cancel`)))
	p.waitGone(`dialog#abort-dialog[open]`)
	p.eventually("focus back on the abort button", `document.activeElement.id === 'abort-action'`)
	if a0 := getAction(t, run, "a0"); a0.Phase != client.RUNNING {
		t.Fatalf("a refused abort left a0 %s, want RUNNING", a0.Phase)
	}
}

// The run list shows a new run live, follows its phase, and links to it.
func TestRunListLive(t *testing.T) {
	run := newRun()
	p := openPage(t, fmt.Sprintf("/projects/%s/domains/%s", run.Project, run.Domain))
	p.waitVisible(`#conn[data-conn="live"]`)

	enqueue(t, run, "a0", "")
	row := fmt.Sprintf(`[data-run=%q]`, run.Name)
	p.waitVisible(row + `[data-phase="QUEUED"]`)
	enqueue(t, run, "b1", "a0")
	setPhase(t, run, "a0", 1, client.RUNNING)
	p.waitVisible(row + `[data-phase="RUNNING"]`)
	p.eventually("two actions in the row", fmt.Sprintf(`document.querySelector('%s td.num').textContent === '2'`, row))

	p.run(chromedp.Click(chromedp.CSS(row + ` a`)))
	p.waitVisible(rowSel("b1", client.QUEUED))
	if path := eval[string](p, `location.pathname`); path != runPath(run) {
		t.Fatalf("the run's link led to %s, want %s", path, runPath(run))
	}
}

// The home page remembers the last project and domain.
func TestHomeRemembersChoice(t *testing.T) {
	p := openPage(t, "/")
	eval[any](p, `localStorage.clear()`)
	p.navigate("/")
	p.run(
		chromedp.SendKeys(chromedp.CSS(`#project`), "flytesnacks"),
		chromedp.SendKeys(chromedp.CSS(`#domain`), "development"),
		chromedp.Click(chromedp.Search(`//button[normalize-space(.)="Go"]`)),
	)
	p.eventually("the run list", `location.pathname === '/projects/flytesnacks/domains/development'`)
	p.waitVisible(`#conn[data-conn="live"]`)

	p.navigate("/")
	project := eval[string](p, `document.getElementById('project').value`)
	domain := eval[string](p, `document.getElementById('domain').value`)
	if project != "flytesnacks" || domain != "development" {
		t.Fatalf("home prefilled %q / %q, want flytesnacks / development", project, domain)
	}

	// A bad name is refused in the form, before any request.
	p.run(chromedp.SetValue(chromedp.CSS(`#project`), "Not Valid"), chromedp.Click(chromedp.Search(`//button[normalize-space(.)="Go"]`)))
	p.waitVisible(`#project[aria-invalid="true"]`)
}

// 2,000 actions in one run: the page shows them (the rows in view, the
// tree being virtualized), and one change touches one row (the rows in the
// window are kept and only the changed one is written).
func TestManyActions(t *testing.T) {
	const n = 2000
	run := newRun()
	enqueue(t, run, "root", "")
	start := time.Now()
	enqueueMany(t, run, "root", n-1)
	t.Logf("enqueued %d actions in %v", n, time.Since(start).Round(time.Millisecond))

	p := openPage(t, runPath(run))
	start = time.Now()
	p.waitVisibleFor(`#conn[data-conn="live"]`, 30*time.Second)
	p.eventually("every action counted", fmt.Sprintf(`document.getElementById('run-count').textContent === '%d actions'`, n))
	p.waitVisible(rowSel("root", ""))
	t.Logf("page showed the run's %d actions %v after navigation; in the page: %s", n, time.Since(start).Round(time.Millisecond),
		eval[string](p, `(() => {
			const synced = performance.getEntriesByName('taskactions:synced')[0];
			const apply = performance.getEntriesByName('taskactions:snapshot')[0];
			return 'stream synced at ' + Math.round(synced.startTime) + 'ms, snapshot applied in ' + Math.round(apply.duration) + 'ms (' + apply.detail + ' actions)';
		})()`))
	if rows := eval[int](p, rowCount); rows > maxRows {
		t.Fatalf("%d rows in the DOM for %d actions, want at most %d", rows, n, maxRows)
	}
	// The target, a thousand rows down, is brought into view as a link to
	// it would.
	target := fmt.Sprintf("c%d", n/2)
	eval[bool](p, fmt.Sprintf(`(location.hash = '#action=%s', true)`, target))
	p.waitVisible(rowSel(target, client.QUEUED) + `[aria-selected="true"]`)

	// Watch the tree: which rows does one status change touch? Durations of
	// unfinished actions tick every second by design, so those are left out.
	eval[any](p, `(() => {
		window.__touched = new Set();
		new MutationObserver((records) => {
			for (const r of records) {
				const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
				if (el.closest('.c-dur')) continue;
				const row = el.closest('.row') || (r.type === 'childList' ? el : null);
				window.__touched.add(row && row.dataset.action ? row.dataset.action : '(' + el.className + ')');
			}
		}).observe(document.getElementById('tree'), { subtree: true, childList: true, attributes: true, characterData: true });
	})()`)
	setPhase(t, run, target, 1, client.RUNNING)
	p.waitVisible(rowSel(target, client.RUNNING))
	touched := eval[[]string](p, `(async () => { await new Promise((r) => setTimeout(r, 300)); return [...window.__touched]; })()`)
	if len(touched) != 1 || touched[0] != target {
		t.Fatalf("one status change touched %v, want only %s", touched, target)
	}
}

// enqueueMany enqueues count children of parent, named c1..c<count>, a few
// at a time.
func enqueueMany(t *testing.T, run client.RunIdentifier, parent string, count int) {
	t.Helper()
	names := make(chan string)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range names {
				if err := tryEnqueue(run, name, parent); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := 1; i <= count; i++ {
		names <- fmt.Sprintf("c%d", i)
	}
	close(names)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// Phone width: nothing sticks out sideways; the tree and the detail panel
// stack. And a screenshot of the run page at 1280x800, with actions in
// several phases and one selected: docs/dashboard.png with
// -update-screenshot, else a temp file.
func TestLayoutAndScreenshot(t *testing.T) {
	// A name like a generated run id, new on each run of the test.
	run := client.RunIdentifier{Project: "flytesnacks", Domain: "development", Name: "train-" + strconv.FormatInt(time.Now().UnixNano()%(36*36*36*36*36), 36)}
	seedDemoRun(t, run)

	p := openPage(t, runPath(run)+"#action=train")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.waitVisible(rowSel("report", client.QUEUED))
	p.eventually("train in the detail panel", `document.getElementById('detail-title').textContent === 'train'`)

	for _, path := range []string{"/", fmt.Sprintf("/projects/%s/domains/%s", run.Project, run.Domain), runPath(run) + "#action=train"} {
		p.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
		p.navigate(path)
		p.waitVisible(`main > *`)
		if path != "/" {
			p.waitVisible(`#conn[data-conn="live"]`)
		}
		if overflow := eval[int](p, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
			t.Errorf("%s at 390px wide: %dpx wider than the screen", path, overflow)
		}
	}

	p.run(chromedp.EmulateViewport(1280, 800))
	p.navigate(runPath(run) + "#action=train")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.eventually("train in the detail panel", `document.getElementById('detail-title').textContent === 'train'`)
	// Focus where the keyboard would be, and let durations settle.
	p.run(chromedp.Focus(chromedp.CSS(rowSel("train", ""))), chromedp.Sleep(300*time.Millisecond))
	shot, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
		t.Fatalf("screenshot: %v, %dx%d, want a 1280x800 PNG", err, cfg.Width, cfg.Height)
	}
	out := filepath.Join(t.TempDir(), "dashboard.png")
	if *updateScreenshot {
		out = filepath.Join("..", "..", "docs", "dashboard.png")
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)
}

// seedDemoRun makes a run that looks like real work: a pipeline whose steps
// are in several phases, with retries, cache results, an error and an abort.
// Timestamps have a resolution of one second, so it pauses between stages
// for the timeline and the order of the steps to show time passing.
func seedDemoRun(t *testing.T, run client.RunIdentifier) {
	t.Helper()
	cache := func(c client.CacheStatus) *client.CacheStatus { return &c }
	msg := func(s string) *string { return &s }
	stage := func(enqueues [][2]string, statuses ...func()) {
		for _, a := range enqueues {
			enqueue(t, run, a[0], a[1])
		}
		for _, st := range statuses {
			st()
		}
		time.Sleep(1100 * time.Millisecond)
	}
	step := func(action string, attempt int32, st client.ActionStatus) func() {
		return func() { setStatus(t, run, action, attempt, st) }
	}
	stage([][2]string{{"pipeline", ""}, {"fetch", "pipeline"}, {"validate", "pipeline"}},
		step("pipeline", 1, client.ActionStatus{Phase: client.RUNNING}),
		step("fetch", 1, client.ActionStatus{Phase: client.RUNNING, CacheStatus: cache(client.MISS)}),
		step("validate", 1, client.ActionStatus{Phase: client.SUCCEEDED, CacheStatus: cache(client.HIT), Message: msg("served from cache")}))
	stage([][2]string{{"train", "pipeline"}, {"shard-0", "train"}, {"shard-1", "train"}, {"shard-2", "train"}, {"shard-3", "train"}},
		step("fetch", 1, client.ActionStatus{Phase: client.SUCCEEDED, CacheStatus: cache(client.POPULATED)}),
		step("train", 1, client.ActionStatus{Phase: client.INITIALIZING, Message: msg("pulling image")}),
		step("shard-0", 1, client.ActionStatus{Phase: client.RUNNING}),
		step("shard-1", 1, client.ActionStatus{Phase: client.RUNNING}))
	stage([][2]string{{"evaluate", "pipeline"}, {"export", "pipeline"}, {"notify", "pipeline"}, {"report", "pipeline"}},
		step("train", 1, client.ActionStatus{Phase: client.RUNNING, Message: msg("4 shards")}),
		step("shard-0", 1, client.ActionStatus{Phase: client.SUCCEEDED}),
		step("shard-2", 1, client.ActionStatus{Phase: client.RUNNING}),
		step("export", 1, client.ActionStatus{Phase: client.RUNNING}))
	step("export", 1, client.ActionStatus{Phase: client.FAILED, Error: &client.ErrorInfo{
		Kind: "USER", Code: msg("ExportError"), Message: msg("bucket gs://models/exports is not writable"),
	}})()
	step("train", 2, client.ActionStatus{Phase: client.RUNNING, Message: msg("attempt 2 after a lost node")})()
	step("shard-1", 1, client.ActionStatus{Phase: client.SUCCEEDED})()
	step("shard-3", 1, client.ActionStatus{Phase: client.RUNNING})()
	resp, err := srv.api.AbortActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, "notify",
		client.AbortRequest{Reason: msg("notifications paused for the maintenance window")})
	if err != nil || resp.StatusCode() != 202 {
		t.Fatalf("abort notify: %v %s", err, resp.Body)
	}
}

// TestRunPageBackForwardCache: a run page that goes into the back-forward
// cache closes its stream (a browser has six connections per server over
// HTTP/1.1; a few cached pages holding streams used them all, and the
// next page never loaded), and back, resumes from its last event id and
// shows what changed meanwhile.
func TestRunPageBackForwardCache(t *testing.T) {
	run := newRun()
	enqueue(t, run, "a0", "")
	p := openPage(t, runPath(run))
	p.waitVisible(`[data-action="a0"]`)
	p.waitVisible(`#conn[data-conn="live"]`)
	eval[bool](p, `(window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true })), true)`)
	enqueue(t, run, "b1", "a0")
	time.Sleep(300 * time.Millisecond) // what a live stream would take to show it
	if eval[bool](p, `!!document.querySelector('[data-action="b1"]')`) {
		t.Fatal("b1 showed while the page was in the back-forward cache: the stream was not closed")
	}
	eval[bool](p, `(window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true })), true)`)
	p.eventually("b1 after the page came back", `!!document.querySelector('[data-action="b1"]')`)
	p.waitVisible(`#conn[data-conn="live"]`)
}
