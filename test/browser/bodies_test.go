package browser

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// sentRequest is what the page's fetch was given for one operation, and
// how the operation ended.
type sentRequest struct {
	Op     string  `json:"op"`
	OK     bool    `json:"ok"`
	Err    string  `json:"err"`
	URL    string  `json:"url"`
	Method string  `json:"method"`
	Type   *string `json:"type"`
	Body   *string `json:"body"`
}

// callOps calls the dashboard's API module (js/api.js) on the page, one
// operation after the other, and reports what each sent: calls is a
// JavaScript object of name -> (api) => promise.
const callOps = `(async (calls) => {
	const api = await import('/js/api.js');
	const real = window.fetch;
	let seen = null;
	window.fetch = (url, o = {}) => {
		seen = { url: String(url), method: o.method || 'GET', type: new Headers(o.headers).get('Content-Type'), body: o.body === undefined || o.body === null ? null : String(o.body) };
		return real(url, o);
	};
	const out = [];
	try {
		for (const [op, call] of Object.entries(calls)) {
			seen = null;
			try {
				await call(api);
				out.push({ op, ok: true, ...seen });
			} catch (e) {
				out.push({ op, ok: false, err: String(e && e.message), ...seen });
			}
		}
	} finally {
		window.fetch = real;
	}
	return out;
})`

// checkBodiless fails the test for an operation that failed or sent a
// body or a Content-Type.
func checkBodiless(t *testing.T, sent []sentRequest, want int) {
	t.Helper()
	if len(sent) != want {
		t.Fatalf("%d operations reported, want %d: %+v", len(sent), want, sent)
	}
	for _, s := range sent {
		if !s.OK {
			t.Errorf("%s (%s %s) failed: %s", s.Op, s.Method, s.URL, s.Err)
		}
		if s.Body != nil || s.Type != nil {
			t.Errorf("%s (%s %s) sent body %v with Content-Type %v, want neither, as the generated SDKs send it", s.Op, s.Method, s.URL, deref(s.Body), deref(s.Type))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "(none)"
	}
	return fmt.Sprintf("%q", *s)
}

// The dashboard calls the operations that take no request body (abort
// without a reason, delete, refresh, approve, logout) without one and
// without a Content-Type, as the generated SDKs do; each succeeds.
func TestBodilessOperations(t *testing.T) {
	running := newRun()
	enqueue(t, running, "a0", "")
	setPhase(t, running, "a0", 1, client.RUNNING)
	finished := newRun()
	enqueue(t, finished, "b0", "")
	setPhase(t, finished, "b0", 1, client.SUCCEEDED)

	project := newStageProject()
	createPromoStage(t, project, "uat", nil, pstepDef{uses: "sleep", as: "nap", config: map[string]any{"duration": "10m"}})
	createPromoStage(t, project, "prod", []string{"uat"}, pstepDef{uses: "echo", as: "say", config: map[string]any{"message": "hi"}})
	createPromoStage(t, project, "scratch", nil, pstepDef{uses: "echo", as: "say", config: map[string]any{"message": "hi"}})
	f := createFreight(t, project, "app", "bodiless", "1.0.0")
	promo := promoteAPI(t, project, "uat", f)
	waitPromotion(t, project, promo, "Running")

	p := openPage(t, "/")
	calls := fmt.Sprintf(`{
		abortAction: (api) => api.abortAction(%[1]q, %[2]q, %[3]q, 'a0'),
		deleteRun: (api) => api.deleteRun(%[4]q, %[5]q, %[6]q),
		refreshStage: (api) => api.refreshStage(%[7]q, 'uat', false),
		approveFreight: (api) => api.approveFreight(%[7]q, %[8]q, 'prod'),
		abortPromotion: (api) => api.abortPromotion(%[7]q, %[9]q),
		deleteStage: (api) => api.deleteStage(%[7]q, 'scratch'),
	}`, running.Project, running.Domain, running.Name, finished.Project, finished.Domain, finished.Name, project, f, promo)
	checkBodiless(t, eval[[]sentRequest](p, callOps+"("+calls+")"), 6)

	// Logging out, in a browser of its own (the shared one keeps its session).
	token, err := testserver.AdminToken(srv.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	q := newTab(t, chromedp.WithNewBrowserContext())
	q.run(chromedp.Navigate(srv.url + "/healthz"))
	q.logIn(token)
	checkBodiless(t, eval[[]sentRequest](q, callOps+"({ logout: (api) => api.logout() })"), 1)
}
