package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
