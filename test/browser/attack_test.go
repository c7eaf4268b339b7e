package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"taskactions/internal/app"
	"taskactions/pkg/client"
)

// The attacks of issue 11, run from a hostile page in a real browser that
// is logged in to the dashboard: they must fail with authentication on
// (the default) and, thanks to the Host and cross-origin checks alone, with
// authentication off too.

// openServer is a server with --auth=none (loopback), for showing that the
// browser-facing checks stop the attacks without authentication's help.
func openServer(t *testing.T) *server {
	t.Helper()
	s, err := startServer(filepath.Join(t.TempDir(), "data"), "127.0.0.1:0", func(c *app.Config) { c.Auth = app.AuthNone })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.app.Stop() })
	return s
}

func victims(t *testing.T) map[string]*server {
	return map[string]*server{"authentication on": srv, "authentication off": openServer(t)}
}

// processAction is what an attacker wants enqueued: a command that leaves
// a mark.
func processAction(run client.RunIdentifier, name, marker string) string {
	return fmt.Sprintf(`{"action":{"actionId":{"run":{"project":%q,"domain":%q,"name":%q},"name":%q},"task":{"taskTemplate":{"type":"process","container":{"command":["touch",%q]}}}}}`,
		run.Project, run.Domain, run.Name, name, marker)
}

// DNS rebinding: a page on evil.test, which resolves to 127.0.0.1, is
// same-origin with the server at evil.test:<port>. It can neither run a
// command nor read anything: the server refuses the foreign Host.
func TestDNSRebindingIsRefused(t *testing.T) {
	for name, s := range victims(t) {
		t.Run(name, func(t *testing.T) {
			run := newRun()
			marker := filepath.Join(t.TempDir(), "pwned")
			port := s.addr[strings.LastIndexByte(s.addr, ':')+1:]
			p := newTab(t)
			p.allowFailedRequest("evil.test")
			p.run(chromedp.Navigate("http://evil.test:" + port + "/"))
			got := eval[[]any](p, fmt.Sprintf(`(async () => {
				const enq = await fetch('/api/v1/actions', {method: 'POST', credentials: 'include',
					headers: {'Content-Type': 'application/json'}, body: %q});
				const read = await fetch('/api/v1/projects/%s/domains/%s/runs', {credentials: 'include'});
				const page = await fetch('/');
				return [location.origin, enq.status, read.status, page.status];
			})()`, processAction(run, "pwn", marker), run.Project, run.Domain))
			if got[0] != "http://evil.test:"+port {
				t.Fatalf("the attack ran at %v, not on the rebound name", got[0])
			}
			for i, what := range []string{"enqueue", "read", "dashboard"} {
				if got[i+1] != float64(http.StatusForbidden) {
					t.Errorf("%s from evil.test: HTTP %v, want 403", what, got[i+1])
				}
			}
			assertNoAction(t, s, run, "pwn")
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the attacker's command ran")
			}
		})
	}
}

// CSRF: a page of another origin on the same site (127.0.0.1, another
// port, so the SameSite cookie goes along) tries every request a page can
// send without the server's consent: a simple POST with no body, a
// text/plain one, a form, and a JSON one (which needs a preflight). None
// aborts the action: the browser marks them Sec-Fetch-Site: same-site,
// which http.CrossOriginProtection refuses.
func TestCrossSiteRequestsCannotAbort(t *testing.T) {
	for name, s := range victims(t) {
		t.Run(name, func(t *testing.T) {
			run := newRun()
			resp, err := s.api.EnqueueActionWithResponse(context.Background(), client.EnqueueRequest{Action: client.ActionSpec{
				ActionId: client.ActionIdentifier{Run: run, Name: "a0"},
				Task:     client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "external"}},
			}})
			if err != nil || resp.StatusCode() != http.StatusCreated {
				t.Fatalf("enqueue: %v %v", err, resp.Status())
			}
			target := fmt.Sprintf("%s/api/v1/projects/%s/domains/%s/runs/%s/actions/a0/abort", s.url, run.Project, run.Domain, run.Name)
			attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprintf(w, csrfPage, target, target)
			}))
			defer attacker.Close()

			p := newTab(t)
			p.allowFailedRequest("/abort")
			p.expectLog("has been blocked by CORS policy")
			p.run(chromedp.Navigate(attacker.URL))
			got := eval[map[string]any](p, `window.attack`) // once every request, the form's too, was answered
			t.Logf("what the page saw: %v", got)
			if got["json"] != "blocked" {
				t.Errorf("the JSON request was answered (%v): the preflight should have failed", got["json"])
			}
			a, err := s.api.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, "a0")
			if err != nil || a.JSON200 == nil {
				t.Fatalf("get: %v", err)
			}
			if a.JSON200.Phase != client.QUEUED {
				t.Fatalf("a cross-site page moved the action to %s", a.JSON200.Phase)
			}
		})
	}
}

// csrfPage is the attacker's page: %s is the abort URL (twice).
const csrfPage = `<!doctype html><title>cute cats</title>
<form id="f" method="POST" action="%s" enctype="text/plain" target="sink"><input name='{"reason":"csrf","x":"' value='"}'></form>
<iframe name="sink"></iframe>
<script>
const target = document.getElementById('f').action;
window.attack = (async () => {
  const out = {};
  const send = async (name, init) => {
    try { const r = await fetch(target, Object.assign({method: 'POST', credentials: 'include'}, init)); out[name] = r.type === 'opaque' ? 'sent' : r.status; }
    catch (e) { out[name] = 'blocked'; }
  };
  await send('simple', {mode: 'no-cors'});
  await send('text', {mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body: '{"reason":"csrf"}'});
  await send('json', {headers: {'Content-Type': 'application/json'}, body: '{"reason":"csrf"}'});
  const sink = document.querySelector('iframe[name=sink]');
  const answered = new Promise((resolve) => sink.addEventListener('load', resolve, {once: true}));
  document.getElementById('f').submit();
  await answered;
  out.form = 'answered';
  return out;
})();
</script>
<!-- %s -->`

// CSRF without a body, which no longer needs a Content-Type: a page of
// another origin on the same site sends every bodiless request it can with
// the user's cookies — a no-cors POST to abort, a keepalive one, an empty
// form, a DELETE of a run (no-cors refuses the method; cors mode needs a
// preflight), a logout. Nothing changes. The server's own page, with the
// same cookie and no body either, deletes the run.
func TestCrossSiteBodilessRequestsChangeNothing(t *testing.T) {
	for name, s := range victims(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			running, done := newRun(), newRun()
			for _, r := range []client.RunIdentifier{running, done} {
				resp, err := s.api.EnqueueActionWithResponse(ctx, client.EnqueueRequest{Action: client.ActionSpec{
					ActionId: client.ActionIdentifier{Run: r, Name: "a0"},
					Task:     client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "external"}},
				}})
				if err != nil || resp.StatusCode() != http.StatusCreated {
					t.Fatalf("enqueue: %v %v", err, resp.Status())
				}
			}
			st, err := s.api.PutActionStatusWithResponse(ctx, done.Project, done.Domain, done.Name, "a0", client.StatusRequest{Attempt: 1, Status: client.ActionStatus{Phase: client.SUCCEEDED}})
			if err != nil || st.StatusCode() != http.StatusOK {
				t.Fatalf("finish %s: %v %v", done.Name, err, st.Status())
			}
			api := s.url + "/api/v1"
			urls := map[string]string{
				"abort":   fmt.Sprintf("%s/projects/%s/domains/%s/runs/%s/actions/a0/abort", api, running.Project, running.Domain, running.Name),
				"delete":  fmt.Sprintf("%s/projects/%s/domains/%s/runs/%s", api, done.Project, done.Domain, done.Name),
				"session": api + "/session",
			}
			attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprintf(w, bodilessCSRFPage, urls["abort"], urls["abort"], urls["delete"], urls["session"])
			}))
			defer attacker.Close()

			p := newTab(t)
			p.allowFailedRequest("/abort")
			p.allowFailedRequest("/runs/")
			p.allowFailedRequest("/session")
			p.expectLog("has been blocked by CORS policy")
			p.run(chromedp.Navigate(attacker.URL))
			got := eval[map[string]any](p, `window.attack`) // once every request was answered
			t.Logf("what the page saw: %v", got)
			for _, preflighted := range []string{"delete", "delete with abort", "logout"} {
				if got[preflighted] != "blocked" {
					t.Errorf("%s was answered (%v): its preflight should have failed", preflighted, got[preflighted])
				}
			}
			a, err := s.api.GetActionWithResponse(ctx, running.Project, running.Domain, running.Name, "a0")
			if err != nil || a.JSON200 == nil {
				t.Fatalf("get: %v", err)
			}
			if a.JSON200.Phase != client.QUEUED {
				t.Errorf("a cross-site page moved the action to %s", a.JSON200.Phase)
			}
			if r, err := s.api.GetRunWithResponse(ctx, done.Project, done.Domain, done.Name); err != nil || r.StatusCode() != http.StatusOK {
				t.Errorf("a cross-site page deleted the run: %v %v", err, r.Status())
			}

			// The server's own page: the session cookie (when there is
			// one), no body, no Content-Type.
			own := newTab(t)
			own.run(chromedp.Navigate(s.url + "/"))
			if s == srv && !eval[bool](own, `fetch('/api/v1/session').then((r) => r.ok)`) {
				t.Fatal("the cross-site page logged the browser out")
			}
			if code := eval[float64](own, fmt.Sprintf(`fetch(%q, {method: 'DELETE'}).then((r) => r.status)`, urls["delete"])); code != http.StatusAccepted {
				t.Errorf("the server's own page deleted the finished run: HTTP %v, want 202", code)
			}
		})
	}
}

// bodilessCSRFPage is the attacker's page: %s are the abort URL (twice),
// a finished run's URL and the session's.
const bodilessCSRFPage = `<!doctype html><title>more cats</title>
<form id="f" method="POST" action="%s" target="sink"></form>
<iframe name="sink"></iframe>
<script>
window.attack = (async () => {
  const out = {};
  const send = async (name, url, init) => {
    try { const r = await fetch(url, Object.assign({credentials: 'include'}, init)); out[name] = r.type === 'opaque' ? 'sent' : r.status; }
    catch (e) { out[name] = 'blocked'; }
  };
  const abort = %q, run = %q, session = %q;
  await send('abort', abort, {method: 'POST', mode: 'no-cors'});
  await send('keepalive abort', abort, {method: 'POST', mode: 'no-cors', keepalive: true});
  await send('no-cors delete', run, {method: 'DELETE', mode: 'no-cors'});
  await send('delete', run, {method: 'DELETE'});
  await send('delete with abort', run + '?abort=true', {method: 'DELETE'});
  await send('logout', session, {method: 'DELETE'});
  const sink = document.querySelector('iframe[name=sink]');
  const answered = new Promise((resolve) => sink.addEventListener('load', resolve, {once: true}));
  document.getElementById('f').submit(); // an empty form: no body
  await answered;
  out.form = 'answered';
  return out;
})();
</script>`

func assertNoAction(t *testing.T, s *server, run client.RunIdentifier, name string) {
	t.Helper()
	resp, err := s.api.GetActionWithResponse(context.Background(), run.Project, run.Domain, run.Name, name)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusNotFound {
		t.Fatalf("the attacker's action exists (HTTP %d)", resp.StatusCode())
	}
}
