package browser

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"taskactions/pkg/client"
)

// TestRunPageTellsWhatHappened: a run whose root succeeded while other
// actions failed, timed out, were aborted or never started does not just
// read "Succeeded": a note says what else happened, Abort stays available
// while anything is unfinished, the chips name their phases (failed and
// timed out told apart), an action that never started reads "not
// started", a finished action shows no plugin phase, an aborted one its
// reason and no error box, and phase history deltas are whole seconds.
func TestRunPageTellsWhatHappened(t *testing.T) {
	run := newRun()
	enqueue(t, run, "a0", "")
	for _, c := range []string{"failed", "timedout", "aborted", "waiting", "ok"} {
		enqueue(t, run, c, "a0")
	}
	enqueueSleep(t, run, "sleepy", "a0", "1s")
	setPhase(t, run, "a0", 1, client.RUNNING)
	setPhase(t, run, "a0", 1, client.SUCCEEDED)
	setPhase(t, run, "ok", 1, client.SUCCEEDED)
	setPhase(t, run, "failed", 1, client.FAILED)
	setPhase(t, run, "timedout", 1, client.TIMEDOUT)
	reason := "no longer needed"
	resp, err := srv.api.AbortActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, "aborted", client.AbortRequest{Reason: &reason})
	if err != nil || resp.StatusCode() != 202 {
		t.Fatalf("abort: %v %v", err, resp)
	}
	deadline := time.Now().Add(waitTimeout)
	for getAction(t, run, "sleepy").Phase != client.TIMEDOUT {
		if time.Now().After(deadline) {
			t.Fatal("the sleep action did not time out")
		}
		time.Sleep(100 * time.Millisecond)
	}

	p := openPage(t, runPath(run))
	p.waitVisible(`#conn[data-conn="live"]`)
	p.eventually("the note on the run", `document.getElementById('run-note').textContent === 'with 1 failed, 2 timed out, 1 aborted, 1 not started'`)
	if got := p.text(`h1 .badge`); got != "Succeeded" {
		t.Errorf("the run's badge reads %q, want the root's phase, Succeeded", got)
	}
	if eval[bool](p, `document.getElementById('abort-run').disabled`) {
		t.Error("Abort run is disabled while an action of the run has not started")
	}
	chips := p.text(`.head-chips`)
	for _, want := range []string{"2 succeeded", "1 failed", "2 timed out", "1 aborted", "1 queued"} {
		if !strings.Contains(chips, want) {
			t.Errorf("the chips read %q, want %q among them", chips, want)
		}
	}
	dot := func(phase string) string {
		return eval[string](p, fmt.Sprintf(`getComputedStyle(document.querySelector('.head-chips .chip.ph-%s .dot')).backgroundColor`, phase))
	}
	if dot("FAILED") == dot("TIMED_OUT") {
		t.Errorf("failed and timed out chips have the same dot (%s)", dot("FAILED"))
	}
	// The head is written when the stream is synced, the rows at the next
	// frame's render.
	p.waitVisible(rowSel("waiting", client.QUEUED))
	if got := p.text(rowSel("waiting", client.QUEUED) + ` > :nth-child(6)`); got != "not started" {
		t.Errorf("the queued action's duration reads %q, want \"not started\"", got)
	}

	selectAction := func(name string) {
		p.navigate(runPath(run) + "#action=" + name)
		p.eventually(name+" in the detail panel", fmt.Sprintf(`document.getElementById('detail-title').textContent === %q`, name))
	}
	selectAction("aborted")
	detail := p.text(`#detail`)
	if !strings.Contains(detail, reason) {
		t.Errorf("the aborted action's panel does not show its reason %q: %s", reason, detail)
	}
	if eval[int](p, `[...document.querySelectorAll('#detail .callout h3')].filter((e) => e.textContent.startsWith('Error')).length`) != 0 {
		t.Errorf("the aborted action's panel shows an error box besides its abort reason: %s", detail)
	}
	selectAction("sleepy")
	if detail := p.text(`#detail`); strings.Contains(detail, "Plugin phase") || strings.Contains(detail, "sleeping") {
		t.Errorf("the timed-out sleep action still shows its plugin phase: %s", detail)
	}
	for _, d := range eval[[]string](p, `[...document.querySelectorAll('#detail .delta')].map((e) => e.textContent)`) {
		if strings.HasSuffix(d, "ms") {
			t.Errorf("a phase history delta reads %q: its times have one-second resolution", d)
		}
	}
}

// enqueueSleep enqueues a sleep action of an hour with a timeout.
func enqueueSleep(t *testing.T, run client.RunIdentifier, name, parent, timeout string) {
	t.Helper()
	custom := map[string]any{"duration": "1h"}
	spec := client.ActionSpec{
		ActionId:         client.ActionIdentifier{Run: run, Name: name},
		ParentActionName: &parent,
		Task: client.TaskSpec{TaskTemplate: client.TaskTemplate{
			Type: "sleep", Custom: &custom, Metadata: &client.TaskMetadata{Timeout: &timeout},
		}},
	}
	resp, err := srv.api.EnqueueActionWithResponse(context.Background(), client.EnqueueRequest{Action: spec})
	if err != nil || resp.StatusCode() != 201 {
		t.Fatalf("enqueue %s: %v %v", name, err, resp)
	}
}

// TestRunListFilters: the runs page filters by name and by phase; the
// filters live in the URL, so a link (or a reload) shows the same view,
// and runs that arrive while filtering are filtered too.
func TestRunListFilters(t *testing.T) {
	base := newRun()
	runs := map[string]client.Phase{"nightly-1": client.SUCCEEDED, "nightly-2": client.FAILED, "adhoc-1": client.FAILED}
	for name, phase := range runs {
		r := client.RunIdentifier{Project: base.Project, Domain: base.Domain, Name: name}
		enqueue(t, r, "a0", "")
		setPhase(t, r, "a0", 1, phase)
	}
	list := fmt.Sprintf("/projects/%s/domains/%s", base.Project, base.Domain)
	visible := func(p *page) string {
		return eval[string](p, `[...document.querySelectorAll('tr[data-run]')].filter((tr) => !tr.hidden).map((tr) => tr.dataset.run).sort().join(',')`)
	}

	p := openPage(t, list+"?phase=FAILED")
	p.waitVisible(`#conn[data-conn="live"]`)
	p.eventually("only the failed runs", `[...document.querySelectorAll('tr[data-run]')].filter((tr) => !tr.hidden).length === 2`)
	if got := visible(p); got != "adhoc-1,nightly-2" {
		t.Fatalf("?phase=FAILED shows %s", got)
	}
	p.run(chromedp.SendKeys(`#run-filter`, "night"))
	p.eventually("the name filter applied", `[...document.querySelectorAll('tr[data-run]')].filter((tr) => !tr.hidden).length === 1`)
	if got := visible(p); got != "nightly-2" {
		t.Fatalf("FAILED and \"night\" show %s", got)
	}
	if got := eval[string](p, `location.search`); got != "?q=night&phase=FAILED" {
		t.Fatalf("the URL keeps %q, want the filters", got)
	}
	if got := p.text(`#runs-shown`); got != "1 of 3 runs" {
		t.Errorf("the count reads %q", got)
	}

	// A run that arrives while filtering is filtered too, and shows once
	// it matches.
	late := client.RunIdentifier{Project: base.Project, Domain: base.Domain, Name: "nightly-3"}
	enqueue(t, late, "a0", "")
	p.eventually("the new run, hidden while queued", `(document.querySelector('tr[data-run="nightly-3"]') || {}).hidden === true`)
	setPhase(t, late, "a0", 1, client.FAILED)
	p.eventually("the new run shown once failed", `document.querySelector('tr[data-run="nightly-3"]').hidden === false`)

	// The same URL in another tab: the same view.
	q := newTab(t)
	q.navigate(list + "?q=night&phase=FAILED")
	q.waitVisible(`#conn[data-conn="live"]`)
	q.eventually("the filtered view", `[...document.querySelectorAll('tr[data-run]')].filter((tr) => !tr.hidden).length === 2`)
	if got := visible(q); got != "nightly-2,nightly-3" {
		t.Fatalf("the shared link shows %s", got)
	}
	if got := eval[string](q, `document.getElementById('run-filter').value + '|' + document.getElementById('phase-filter').value`); got != "night|FAILED" {
		t.Fatalf("the shared link's filters read %q", got)
	}
}

// The runs page shows the newest 1,000 runs from its stream, and older
// ones a page at a time from the REST list, until there are none.
func TestRunsPageShowsOlderRuns(t *testing.T) {
	base := newRun()
	const total = 1030
	names := make(chan string, total)
	for i := range total {
		names <- fmt.Sprintf("r%04d", i)
	}
	close(names)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for n := range names {
				if err := tryEnqueue(client.RunIdentifier{Project: base.Project, Domain: base.Domain, Name: n}, "a", ""); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	p := openPage(t, fmt.Sprintf("/projects/%s/domains/%s", base.Project, base.Domain))
	p.waitVisible(`#conn[data-conn="live"]`)
	p.eventually("the snapshot's 1,000 runs", `document.querySelectorAll('tr[data-run]').length === 1000`)
	p.waitVisible(`#runs-older`)
	for i := 0; eval[bool](p, `!document.getElementById('runs-older').hidden`); i++ {
		if i > 20 {
			t.Fatal("Show older runs never ends")
		}
		before := eval[int](p, `document.querySelectorAll('tr[data-run]').length`)
		p.run(chromedp.Click(chromedp.CSS(`#runs-older`)))
		p.eventually("more runs, or the end", fmt.Sprintf(`document.querySelectorAll('tr[data-run]').length > %d || document.getElementById('runs-older').hidden`, before))
	}
	if n := eval[int](p, `new Set([...document.querySelectorAll('tr[data-run]')].map((r) => r.dataset.run)).size`); n != total {
		t.Fatalf("%d distinct runs on the page, want %d", n, total)
	}
}
