package browser

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"taskactions/test/testserver"
)

// A browser without a session gets the login page in place of the page it
// asked for; a wrong token is refused, the admin token opens a session and
// the page asked for; logging out returns to the login. The token never
// appears in the address bar.
func TestLoginPage(t *testing.T) {
	token, err := testserver.AdminToken(srv.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	run := newRun()
	enqueue(t, run, "a0", "")
	p := newTab(t, chromedp.WithNewBrowserContext()) // no cookies
	p.allowFailedRequest("/api/v1/session")
	p.navigate(runPath(run))
	p.waitVisible("#login-form")
	if eval[bool](p, `!!document.querySelector('[data-action]')`) {
		t.Fatal("the run page showed without a session")
	}

	p.run(chromedp.SendKeys("#token", "not-the-token"), chromedp.Click("#login-form button"))
	p.eventually("the refusal", `document.querySelector('#login .form-error').textContent === 'That token is not valid.'`)

	eval[bool](p, `(document.getElementById('token').value = '') === ''`)
	p.run(chromedp.SendKeys("#token", token), chromedp.Click("#login-form button"))
	p.waitVisible(rowSel("a0", ""))
	if href := eval[string](p, `location.href`); strings.Contains(href, token) || !strings.HasSuffix(href, runPath(run)) {
		t.Errorf("after logging in the address is %s", href)
	}
	if who := p.text("#user"); !strings.Contains(who, "admin") {
		t.Errorf("the header says %q, want the subject", who)
	}

	p.run(chromedp.Click("#logout"))
	p.waitVisible("#login-form")

	p.navigate("/?login=expired")
	p.eventually("the expired link's notice", `document.querySelector('#login').textContent.includes('used already or has expired')`)
}

// A logout ends the streams the session holds open: a page's plain
// EventSource is ended, gets 401 on its reconnect, and gives up
// (readyState CLOSED) instead of reading on.
func TestLogoutEndsAPlainEventSource(t *testing.T) {
	token, err := testserver.AdminToken(srv.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	run := newRun()
	enqueue(t, run, "a0", "")
	p := newTab(t, chromedp.WithNewBrowserContext()) // no cookies
	stream := "/api/v1" + runPath(run) + "/events"
	p.allowFailedRequest(stream) // the reconnect after the logout: 401
	p.run(chromedp.Navigate(srv.url + "/healthz"))
	p.logIn(token)
	eval[bool](p, esPage)
	eval[bool](p, `(window.follow('run', '`+stream+`'), true)`)
	p.eventually("synced", `window.streams.run.log.some((e) => e.type === 'synced')`)
	if !eval[bool](p, `fetch('/api/v1/session', {method: 'DELETE', headers: {'Content-Type': 'application/json'}}).then((r) => r.status === 204)`) {
		t.Fatal("the logout failed")
	}
	p.eventually("the EventSource given up", `window.streams.run.closed && window.streams.run.es.readyState === EventSource.CLOSED`)
	if n := eval[int](p, `window.streams.run.opens`); n != 1 {
		t.Errorf("the stream opened %d times, want once", n)
	}
}
