package browser

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// The Warehouses on the pipeline page, live from the project's Warehouse
// stream: a Warehouse subscribed to an image repository of a registry the
// test serves in process shows the Freight its controller discovered; a
// newer tag, after Refresh on the node, shows as the new Freight without a
// reload; a Warehouse no Stage requests from is shown, one that cannot
// discover is shown failed with what its conditions say, and one a Stage
// names but the project lacks is shown missing. Leaving the page closes
// the Warehouse stream.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestWarehousesOnThePipeline(t *testing.T) {
	repo, push := serveRegistry(t)
	push("1.0.0")
	project := newStageProject()
	createWarehouse(t, project, "app", repo)
	createStages(t, project, []stageDef{
		{name: "dev", warehouse: "app"},
		{name: "test", warehouse: "app", upstream: []string{"dev"}},
		{name: "side", warehouse: "nowhere"},
	})
	first := waitFreightOf(t, project, "app", "")

	p := newTab(t)
	if _, err := chromedp.Call(p.ctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: countLive}); err != nil {
		t.Fatal(err)
	}
	p.navigate(stagesPath(project))
	p.waitVisible(`#conn[data-conn="live"]`)
	eval[bool](p, `window.__noReload = true`)
	if got := eval[liveCount](p, `window.__live()`).Streams; !slices.Contains(got, "/api/v1/projects/"+project+"/warehouse-events") {
		t.Errorf("streams open on the pipeline page: %q, want the Warehouse stream among them", got)
	}

	// The discovered Freight, its discovery, the subscriptions.
	app := whSel("app")
	p.waitVisible(app + fmt.Sprintf(`[data-state="Ready"][data-freight=%q]`, first))
	p.waitVisible(edgeSel("w:app", "s:dev"))
	if got := p.text(app + ` .wn-freight`); !strings.Contains(got, first[:7]) || strings.Contains(got, first[7:]) {
		t.Errorf("app's Freight reads %q, want the short name %s", got, first[:7])
	}
	if got := eval[string](p, fmt.Sprintf(`document.querySelector(%q).title`, app+` .wn-freight .v`)); !strings.Contains(got, first) {
		t.Errorf("app's Freight title is %q, want the full name %s", got, first)
	}
	if got := p.text(app + ` .wn-disc`); !strings.HasPrefix(got, "Discovered ") || !(strings.HasSuffix(got, " ago") || strings.HasSuffix(got, "just now")) {
		t.Errorf("app's discovery reads %q, want Discovered … ago", got)
	}
	if got := eval[string](p, fmt.Sprintf(`document.querySelector(%q).title`, app+` .wn-disc time`)); !strings.HasPrefix(got, "Last discovery: ") {
		t.Errorf("app's discovery title is %q, want the full time", got)
	}
	if got := p.text(app + ` .wn-subs`); got != "1 subscription" {
		t.Errorf("app's subscriptions read %q", got)
	}
	if got := p.text(app + ` .badge`); got != "Ready" {
		t.Errorf("app's state reads %q, want Ready", got)
	}
	// A name no Warehouse has: missing, and no Refresh for it.
	p.waitVisible(whSel("nowhere") + `[data-state="Missing"]`)
	if got := p.text(whSel("nowhere")); !strings.Contains(got, "Missing") || !strings.Contains(got, "There is no Warehouse nowhere") {
		t.Errorf("the missing Warehouse reads %q", got)
	}
	if eval[bool](p, fmt.Sprintf(`!document.querySelector(%q).hidden`, whSel("nowhere")+` .wn-refresh`)) {
		t.Error("a missing Warehouse offers Refresh")
	}
	// Chromium updates its accessibility tree after the DOM, at a later
	// frame: under load the node may be drawn before the tree has it.
	var ax map[string][]string
	for deadline := time.Now().Add(waitTimeout); ; time.Sleep(50 * time.Millisecond) {
		if ax = accessibleNames(p); slices.Contains(ax["button"], "Refresh warehouse app") || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Contains(ax["button"], "Refresh warehouse app") {
		t.Errorf("accessibility tree: buttons %q, want Refresh warehouse app", ax["button"])
	}

	// A newer tag, and Refresh on the node: busy until the controller has
	// discovered it, then the new Freight, without a reload.
	push("1.1.0")
	eval[bool](p, fmt.Sprintf(`(() => {
		window.__busy = [];
		const b = document.querySelector(%q);
		new MutationObserver(() => window.__busy.push(b.getAttribute('aria-busy'))).observe(b, { attributes: true, attributeFilter: ['aria-busy'] });
		return true;
	})()`, app+` .wn-refresh`))
	start := time.Now()
	p.run(chromedp.Click(chromedp.CSS(app + ` .wn-refresh`)))
	p.eventually("the new Freight on app's node", fmt.Sprintf(`(() => {
		const f = document.querySelector(%q).dataset.freight;
		return !!f && f !== %q;
	})()`, app, first))
	t.Logf("new tag pushed, Refresh clicked: the new Freight on the node after %v", time.Since(start).Round(time.Millisecond))
	second := waitFreightOf(t, project, "app", first)
	p.waitVisible(app + fmt.Sprintf(`[data-freight=%q]`, second))
	if tag := freightTag(t, project, second); tag != "1.1.0" {
		t.Errorf("the new Freight %s has tag %q, want 1.1.0", second, tag)
	}
	if got := p.text(app + ` .wn-freight`); !strings.Contains(got, second[:7]) {
		t.Errorf("app's Freight reads %q, want %s", got, second[:7])
	}
	if !eval[bool](p, `window.__busy.includes('true')`) {
		t.Error("Refresh was never shown busy")
	}
	p.waitVisible(app + ` .wn-refresh[aria-busy="false"]:not([aria-disabled])`)

	// A Warehouse no Stage requests from, whose repository is not there:
	// shown, failed (red, as a failed Stage), with its conditions' message.
	createWarehouse(t, project, "broken", "127.0.0.1:1/nothing")
	broken := whSel("broken")
	p.waitVisibleFor(broken+`[data-state="Failed"]`, 45*time.Second)
	msg := eval[string](p, fmt.Sprintf(`document.querySelector(%q).title`, broken+` .badge`))
	if !strings.Contains(msg, "127.0.0.1:1/nothing") {
		t.Errorf("the failed Warehouse's state says %q, want its conditions' message", msg)
	}
	if got := p.text(broken + ` .wn-problem`); !strings.Contains(got, msg) {
		t.Errorf("the failed Warehouse's message for screen readers reads %q, want %q", got, msg)
	}
	if got := p.text(broken + ` .badge`); got != "Failed" {
		t.Errorf("the failed Warehouse's state reads %q, want Failed", got)
	}
	if !eval[bool](p, fmt.Sprintf(`(() => {
		const probe = document.createElement('span');
		probe.style.color = 'var(--red-dot)';
		document.body.append(probe);
		const red = getComputedStyle(probe).color;
		probe.remove();
		return getComputedStyle(document.querySelector(%q)).borderLeftColor === red;
	})()`, broken)) {
		t.Error("the failed Warehouse's node is not edged in red")
	}
	if n := eval[int](p, fmt.Sprintf(`document.querySelectorAll('#graph path[data-from=%q]').length`, "w:broken")); n != 0 {
		t.Errorf("%d edges from broken, which no Stage requests from", n)
	}
	// Its column: the Warehouses'.
	if !eval[bool](p, fmt.Sprintf(`document.querySelector(%q).getBoundingClientRect().left === document.querySelector(%q).getBoundingClientRect().left`, broken, app)) {
		t.Error("broken is not in the Warehouses' column")
	}
	if got := p.text(`#main .meta`); !strings.Contains(got, "3 warehouses") {
		t.Errorf("the head reads %q, want 3 warehouses", got)
	}

	// Deleted, it goes (no Stage requests from it).
	if code, b := stageAPI(t, http.MethodDelete, "/projects/"+project+"/warehouses/broken", nil); code != http.StatusNoContent {
		t.Fatalf("delete broken: HTTP %d %s", code, b)
	}
	p.waitGone(broken)
	if !eval[bool](p, `window.__noReload === true`) {
		t.Fatal("the page was reloaded")
	}

	// Leaving the page closes its streams, the Warehouse stream too.
	p.run(chromedp.Click(chromedp.CSS(nodeSel("dev") + ` a`)))
	p.waitVisible(`#stage-detail`)
	p.waitVisible(`#conn[data-conn="live"]`)
	if got := eval[liveCount](p, `window.__live()`).Streams; slices.ContainsFunc(got, func(s string) bool { return strings.HasSuffix(s, "/warehouse-events") }) {
		t.Errorf("streams open after leaving the pipeline page: %q", got)
	}
}

func whSel(name string) string { return fmt.Sprintf(`#graph [data-warehouse=%q]`, name) }

// createWarehouse creates a Warehouse with one image subscription, with
// the generated client.
func createWarehouse(t testing.TB, project, name, repo string) {
	t.Helper()
	doc := fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"subscriptions":[{"image":{"repoURL":%q,"semverConstraint":"^1.0.0"}}]}}`, name, repo)
	r, err := srv.api.CreateWarehouseWithBodyWithResponse(context.Background(), project, "application/json", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode() != http.StatusCreated {
		t.Fatalf("create warehouse %s: HTTP %d %s", name, r.StatusCode(), r.Body)
	}
}

// waitFreightOf waits for the Warehouse's status to name Freight other
// than not, and returns its name.
func waitFreightOf(t testing.TB, project, warehouse, not string) string {
	t.Helper()
	var w *kargoapi.Warehouse
	for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err := srv.api.GetWarehouseWithResponse(context.Background(), project, warehouse)
		if err != nil {
			t.Fatal(err)
		}
		if w = r.JSON200; w != nil && w.Status.LastFreightID != "" && w.Status.LastFreightID != not {
			return w.Status.LastFreightID
		}
		if time.Now().After(deadline) {
			t.Fatalf("warehouse %s names no new Freight (status %+v; HTTP %d)", warehouse, w, r.StatusCode())
		}
	}
}

// freightTag is the tag of the one image of the named Freight.
func freightTag(t testing.TB, project, freight string) string {
	t.Helper()
	r, err := srv.api.GetFreightWithResponse(context.Background(), project, freight)
	if err != nil {
		t.Fatal(err)
	}
	if r.JSON200 == nil || len(r.JSON200.Images) != 1 {
		t.Fatalf("freight %s: HTTP %d %s", freight, r.StatusCode(), r.Body)
	}
	return r.JSON200.Images[0].Tag
}

// serveRegistry serves an image registry in process (go-containerregistry's,
// over HTTP on loopback) with one repository; push makes a random image
// and tags it.
func serveRegistry(t *testing.T) (repo string, push func(tag string)) {
	t.Helper()
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	repo = strings.TrimPrefix(reg.URL, "http://") + "/app"
	return repo, func(tag string) {
		t.Helper()
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := name.NewTag(repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
}
