package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"taskactions/api"
	"taskactions/pkg/client"
)

// A browser's way in: the one-time login link, or a token pasted into the
// login form (POST /session), each setting an HttpOnly, SameSite=Strict
// cookie that the API and a stream accept; logging out clears it. The
// link works once, and the token is never in a URL.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestSessionsAndTheLoginLink(t *testing.T) {
	jarClient := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 10 * time.Second}
	}
	who := func(c *http.Client) (int, string) {
		resp, err := c.Get(srv.URL() + "/api/v1/session")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s struct {
			Subject string `json:"subject"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&s)
		return resp.StatusCode, s.Subject
	}

	// The login link.
	link := srv.app.LoginURL()
	if strings.Contains(link, srv.token) {
		t.Fatal("the login link carries the token")
	}
	browser := jarClient()
	if code, _ := who(browser); code != http.StatusUnauthorized {
		t.Fatalf("before logging in: HTTP %d, want 401", code)
	}
	resp, err := browser.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/" || resp.Request.URL.RawQuery != "" {
		t.Errorf("the link led to %s, want the dashboard", resp.Request.URL)
	}
	u, _ := url.Parse(srv.URL())
	cookies := browser.Jar.Cookies(u)
	if len(cookies) != 1 || !strings.HasPrefix(cookies[0].Name, "taskactions-session-") {
		t.Fatalf("cookies after the link: %v", cookies)
	}
	if code, sub := who(browser); code != http.StatusOK || sub != "admin" {
		t.Fatalf("after the link: HTTP %d as %q, want 200 as admin", code, sub)
	}
	// The cookie opens a stream, as a plain EventSource sends it.
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	stream := openStream(t, browser, runStreamURL(srv, run), "")
	if got := stream.untilSynced(t); len(got) != 2 {
		t.Errorf("stream with the session cookie: %q", eventTypes(got))
	}
	stream.close()

	// Once only.
	second := jarClient()
	resp, err = second.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.RawQuery != "login=expired" {
		t.Errorf("a used link led to %s, want /?login=expired", resp.Request.URL)
	}
	if code, _ := who(second); code != http.StatusUnauthorized {
		t.Errorf("a used link logged in: HTTP %d", code)
	}

	// The login form: a wrong token is 401, the right one sets the cookie.
	form := jarClient()
	post := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/api/v1/session", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := form.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if c := resp.Header.Get("Set-Cookie"); c != "" && (!strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict")) {
			t.Errorf("session cookie %q: want HttpOnly and SameSite=Strict", c)
		}
		return resp.StatusCode
	}
	if code := post(`{"token":"not-the-token-0123456789"}`); code != http.StatusUnauthorized {
		t.Errorf("login with a wrong token: HTTP %d, want 401", code)
	}
	if code := post(`{"token":"` + srv.token + `"}`); code != http.StatusOK {
		t.Fatalf("login with the token: HTTP %d", code)
	}
	if code, sub := who(form); code != http.StatusOK || sub != "admin" {
		t.Fatalf("after logging in: HTTP %d as %q", code, sub)
	}

	// Logging out ends the session itself, not only the browser's cookie:
	// a copy of it (stolen, or in another tab's jar) no longer works.
	copied := jarClient()
	copied.Jar.SetCookies(u, form.Jar.Cookies(u))
	if code, _ := who(copied); code != http.StatusOK {
		t.Fatalf("a copy of the session cookie before the logout: HTTP %d", code)
	}
	// So do the streams a session holds open, the copy's too, and its log
	// tail; a token's stream goes on.
	run = newRun()
	enqueue(t, srv, run, "a0", "")
	putStatus(t, srv, run, "a0", 1, client.RUNNING)
	noTimeout := func(c *http.Client) *http.Client {
		nc := *c // the streams outlast the clients' timeout
		nc.Timeout = 0
		return &nc
	}
	var held []*sseStream
	for _, c := range []*http.Client{form, copied, srv.http} {
		st := openStream(t, noTimeout(c), runStreamURL(srv, run), "")
		st.untilSynced(t)
		held = append(held, st)
	}
	logTail := openStream(t, noTimeout(copied), logEventsURL(srv, run, "a0", ""), "")
	req, _ := http.NewRequest(http.MethodDelete, srv.URL()+"/api/v1/session", nil)
	resp, err = form.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, _ := who(form); resp.StatusCode != http.StatusNoContent || code != http.StatusUnauthorized {
		t.Errorf("logout: HTTP %d, then the session answers %d; want 204 then 401", resp.StatusCode, code)
	}
	if code, _ := who(copied); code != http.StatusUnauthorized {
		t.Errorf("a copy of the session cookie after the logout: HTTP %d, want 401", code)
	}
	for i, who := range []string{"the session's own", "the copy's"} {
		if !held[i].ended(5 * time.Second) {
			t.Errorf("%s stream still open 5 s after the logout", who)
		}
	}
	if !logTail.ended(5 * time.Second) {
		t.Error("the copy's log tail still open 5 s after the logout")
	}
	if held[2].ended(time.Second) {
		t.Error("the logout ended a stream opened with the token")
	}
}

// The document's sessionCookie scheme names the cookie taskactions-session
// (it can name no port): an SDK that authenticates as the document says is
// let in, with the value of the cookie the server set (named for its port).
func TestSessionCookieAsTheDocumentNamesIt(t *testing.T) {
	ctx := context.Background()
	anonymous, err := client.NewClientWithResponses(srv.URL() + "/api/v1")
	if err != nil {
		t.Fatal(err)
	}
	in, err := anonymous.CreateSessionWithResponse(ctx, client.LoginRequest{Token: srv.token})
	want(t, in, err, http.StatusOK)
	cookies := in.HTTPResponse.Cookies()
	if len(cookies) != 1 || !strings.HasPrefix(cookies[0].Name, "taskactions-session-") {
		t.Fatalf("cookies set: %v", cookies)
	}
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	scheme := doc.Components.SecuritySchemes["sessionCookie"].Value
	if scheme.In != "cookie" {
		t.Fatalf("sessionCookie is in %q", scheme.In)
	}
	for _, name := range []string{scheme.Name, cookies[0].Name} {
		c, err := client.NewClientWithResponses(srv.URL()+"/api/v1", client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.AddCookie(&http.Cookie{Name: name, Value: cookies[0].Value})
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.GetSessionWithResponse(ctx)
		want(t, s, err, http.StatusOK)
		if decoded(t, s.JSON200).Subject != "admin" {
			t.Errorf("cookie %s: subject %q", name, s.JSON200.Subject)
		}
	}
}
