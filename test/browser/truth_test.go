package browser

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"taskactions/pkg/client"
)

// What the dashboard says must be so (issue 35, item 10).

// A mistyped run URL says there is no such run, not "no actions yet"
// forever.
func TestRunPageNoSuchRun(t *testing.T) {
	run := newRun()
	enqueue(t, run, "a0", "") // the project and domain exist; the run asked for does not
	p := newTab(t)
	p.allowFailedRequest("/runs/nosuch") // the page asks whether it exists: 404
	p.navigate(fmt.Sprintf("/projects/%s/domains/%s/runs/nosuch", run.Project, run.Domain))
	p.waitVisible(`#conn[data-conn="live"]`)
	p.eventually("the page to say there is no such run", `[...document.querySelectorAll('main p')].some((el) => el.offsetParent && el.textContent.includes('There is no run nosuch'))`)
	if eval[bool](p, `[...document.querySelectorAll('main p')].some((el) => el.offsetParent && el.textContent.startsWith('No actions in this run yet'))`) {
		t.Error("the page also says the run has no actions yet")
	}
}

// While a run's stream has not sent its snapshot, the run page says it is
// loading, not "0 actions". The stream is held here until that is checked.
func TestRunPageCountWhileLoading(t *testing.T) {
	run := newRun()
	for _, n := range []string{"a0", "a1", "a2"} {
		parent := ""
		if n != "a0" {
			parent = "a0"
		}
		enqueue(t, run, n, parent)
	}
	p := newTab(t)
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/runs/" + run.Name + "/events*"}}}); err != nil {
		t.Fatal(err)
	}
	held := make(chan fetch.RequestID, 1)
	go func() {
		for ev, err := range paused {
			if err == nil {
				held <- ev.RequestID
			}
			return
		}
	}()
	p.navigate(runPath(run))
	var id fetch.RequestID
	select {
	case id = <-held:
	case <-time.After(waitTimeout):
		t.Fatal("the page opened no run stream")
	}
	count := `document.querySelector('.page-head .meta > span:last-child').textContent`
	if got := eval[string](p, count); got != "Loading…" {
		t.Errorf("before the stream's snapshot the run page counts %q, want \"Loading…\"", got)
	}
	if _, err := chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id}); err != nil {
		t.Fatal(err)
	}
	p.eventually("3 actions counted", count+` === '3 actions'`)
}

// A sub-second run's duration reads alike in the runs list, on its run
// page and on its Promotion's page: one formatter, to the second.
func TestDurationsReadAlike(t *testing.T) {
	run := newRun()
	enqueue(t, run, "a0", "")
	setPhase(t, run, "a0", 1, client.SUCCEEDED)
	sub := regexp.MustCompile(`^(<1s|\d+s)$`)

	p := openPage(t, fmt.Sprintf("/projects/%s/domains/%s", run.Project, run.Domain))
	p.waitVisible(fmt.Sprintf(`tr[data-run=%q][data-phase="SUCCEEDED"]`, run.Name))
	list := p.text(fmt.Sprintf(`tr[data-run=%q] td:last-child`, run.Name))
	p.navigate(runPath(run))
	p.waitVisible(rowSel("a0", client.SUCCEEDED))
	page := eval[string](p, `document.querySelector('.page-head .meta > span:nth-child(2) > span').textContent`)
	row := p.text(rowSel("a0", "") + ` .c-dur`)
	if !sub.MatchString(list) || list != page || page != row {
		t.Errorf("the run took %q in the runs list, %q in its page's head, %q in its row: want one reading to the second (\"<1s\")", list, page, row)
	}

	project := newStageProject()
	createPromoStage(t, project, "uat", nil, pstepDef{uses: "echo", as: "say", config: map[string]any{"message": "hi"}})
	f := createFreight(t, project, "app", "quick", "1.0.0")
	name := promoteAPI(t, project, "uat", f)
	waitPromotion(t, project, name, "Succeeded")
	p.navigate(promotionPath(project, name))
	p.waitVisible(`#promotion-steps li[data-step="say"][data-status="Succeeded"]`)
	p.eventually("the promotion's duration", `/\d|<1s/.test(document.getElementById('promotion-duration').textContent)`)
	if got := p.text(`#promotion-duration`); !sub.MatchString(got) {
		t.Errorf("the promotion page says it took %q, want to the second as the run pages do (\"<1s\", \"2s\")", got)
	}
}

// At 390 px the Promotion page's breadcrumbs keep the project's and the
// Stage's names whole (the long Promotion name gives way).
func TestBreadcrumbsOnAPhone(t *testing.T) {
	project := newStageProject()
	createPromoStage(t, project, "uat", nil, pstepDef{uses: "echo", as: "say", config: map[string]any{"message": "hi"}})
	f := createFreight(t, project, "app", "crumbs", "1.0.0")
	name := promoteAPI(t, project, "uat", f)
	p := newTab(t)
	p.run(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	p.navigate(promotionPath(project, name))
	p.waitVisible(`#crumbs a[href$="/stages/uat"]`)
	cut := eval[[]string](p, `[...document.querySelectorAll('#crumbs li')].slice(0, -1)
		.filter((li) => li.scrollWidth > li.clientWidth + 1 || li.getBoundingClientRect().right > document.getElementById('crumbs').getBoundingClientRect().right + 1)
		.map((li) => li.textContent)`)
	if len(cut) > 0 {
		t.Errorf("at 390px these breadcrumbs are cut off: %q (all: %q)", cut, p.text(`#crumbs`))
	}
}

// The login page names this server's token file, in its data dir.
func TestLoginNamesTokenFile(t *testing.T) {
	p := newTab(t, chromedp.WithNewBrowserContext()) // no cookies
	p.allowFailedRequest("/api/v1/session")
	p.navigate("/")
	p.waitVisible("#login-form")
	want := filepath.Join(srv.dataDir, "api-token")
	if got := p.text(`#token-hint code`); got != want {
		t.Errorf("the login page says the token is in %q, want %q", got, want)
	}
	if hint := p.text(`#token-hint`); !strings.Contains(hint, want) {
		t.Errorf("the hint reads %q", hint)
	}
}
