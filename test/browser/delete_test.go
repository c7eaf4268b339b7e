package browser

import (
	"context"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"taskactions/pkg/client"
)

// A finished run offers Delete run; an unfinished one does not. Deleting
// asks first, then the run is gone from the API and the page goes back to
// the project's runs.
func TestDeleteFinishedRun(t *testing.T) {
	run := newRun()
	enqueue(t, run, "a0", "")
	enqueue(t, run, "c1", "a0")
	setPhase(t, run, "a0", 1, client.SUCCEEDED)
	p := openPage(t, runPath(run))
	p.waitVisible(rowSel("c1", client.QUEUED))
	if eval[bool](p, `!document.getElementById('delete-run').hidden`) {
		t.Fatal("Delete run offered while c1 is unfinished")
	}
	setPhase(t, run, "c1", 1, client.FAILED)
	p.waitVisible(`#delete-run:not([hidden])`)
	p.run(chromedp.Click(`#delete-run`))
	p.waitVisible(`dialog#abort-dialog[open]`)
	if eval[bool](p, `!document.getElementById('abort-reason').hidden`) {
		t.Error("the deletion asks for a reason")
	}
	p.run(chromedp.Click(chromedp.Search(`//dialog[@open]//button[contains(., "Delete run")]`)))
	p.eventually("the runs page", `location.pathname === '/projects/`+run.Project+`/domains/`+run.Domain+`'`)
	resp, err := srv.api.GetRunWithResponse(context.Background(), run.Project, run.Domain, run.Name)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusNotFound {
		t.Errorf("the deleted run: HTTP %d, want 404", resp.StatusCode())
	}
}
