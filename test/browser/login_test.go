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
