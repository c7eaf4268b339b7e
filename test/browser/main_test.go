// Package browser tests the web dashboard end to end in real headless
// Chromium, driven by chromedp, against a real server (internal/app) on a
// loopback port, started here like test/e2e does.
//
// Chromium is required: without it the package fails (it does not skip),
// since then the dashboard would ship untested. Debian: apt-get install -y
// chromium; another binary: TASKACTIONS_CHROMIUM=/path/to/chrome.
package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"taskactions/internal/app"
	"taskactions/internal/logging"
	"taskactions/internal/testenv"
	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

var (
	// srv is the server under test; TestRunPageLive replaces it when it
	// restarts the server (same data dir, same port).
	srv *server
	// browserCtx is the browser; each test opens its own tab in it.
	browserCtx context.Context
)

func TestMain(m *testing.M) {
	if dataDir := os.Getenv(serveEnv); dataDir != "" {
		os.Exit(serve(dataDir, os.Getenv("TASKACTIONS_LISTEN")))
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	chromium, err := findChromium()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "browser")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	logging.RouteKlog(testenv.Logger())
	srv, err = startServer(filepath.Join(dir, "data"), "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "start server:", err)
		return 1
	}
	defer func() {
		if err := srv.app.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop server:", err)
		}
	}()

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox, // we run as root in a container
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// evil.test is the attacker's name for 127.0.0.1 (DNS rebinding).
		chromedp.Flag("host-resolver-rules", "MAP evil.test 127.0.0.1"),
		chromedp.UserDataDir(filepath.Join(dir, "chromium")),
		chromedp.WindowSize(1280, 800),
	)
	defer cancelAlloc()
	// The first context starts the browser; cancelling it would close the
	// browser, so it lives as long as the package's tests.
	var cancelBrowser context.CancelFunc
	browserCtx, cancelBrowser = chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browserCtx); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: start %s: %v\n", chromium, err)
		return 1
	}
	// Log the browser in as a user does, with the one-time link: the
	// session cookie then serves every tab, and the restarted server too.
	if err := chromedp.Do(browserCtx, chromedp.Navigate(srv.app.LoginURL())); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: log in: %v\n", err)
		return 1
	}
	return m.Run()
}

func findChromium() (string, error) {
	if p := os.Getenv("TASKACTIONS_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("TASKACTIONS_CHROMIUM: %w", err)
		}
		return p, nil
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("Chromium not found: the dashboard tests need it (Debian: apt-get install -y chromium; or set TASKACTIONS_CHROMIUM)")
}

// server is a running server and a client for its API.
type server struct {
	app     *app.App
	url     string
	addr    string // host:port, kept across a restart
	dataDir string
	api     *client.ClientWithResponses
}

func startServer(dataDir, listen string, mutate ...func(*app.Config)) (*server, error) {
	cfg := testserver.Config(dataDir, listen)
	for _, f := range mutate {
		f(&cfg)
	}
	a, c, err := testserver.Start(cfg)
	if err != nil {
		return nil, err
	}
	return &server{app: a, url: a.URL(), addr: strings.TrimPrefix(a.URL(), "http://"), dataDir: dataDir, api: c}, nil
}

// restartServer stops the server, runs whileDown, and starts a new one on
// the same data dir and the same port, so that pages reconnect to it.
func restartServer(t *testing.T, whileDown func()) {
	t.Helper()
	old := srv
	if err := old.app.Stop(); err != nil {
		t.Fatalf("stop server: %v", err)
	}
	whileDown()
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		srv, err = startServer(old.dataDir, old.addr)
		// The port can take a moment to be free again.
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("restart server on %s: %v", old.addr, err)
	}
}

// page is one browser tab. It records console errors and uncaught
// exceptions; the test fails on any at its end.
type page struct {
	t   testing.TB
	ctx context.Context

	mu       sync.Mutex
	problems []string
	excused  []string
	// restarting marks the window in which the test stops and starts the
	// server: the browser then logs the failed reconnects of the event
	// streams, which are expected.
	restarting atomic.Bool
	// failing are URLs that a test makes fail on purpose: the browser logs
	// their error status. expected are messages a test provokes (the CORS
	// refusal of an attacker's request). Nothing else is excused.
	failing  []string
	expected []string
}

// expectLog excuses a browser log entry whose text contains part.
func (p *page) expectLog(part string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expected = append(p.expected, part)
}

// allowFailedRequest excuses the browser's log of a failed request to a URL
// containing part, which the test makes fail on purpose.
func (p *page) allowFailedRequest(part string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failing = append(p.failing, part)
}

// openPage opens a tab at path (1280x800) and waits for the page's script
// to have run.
func openPage(t *testing.T, path string) *page {
	t.Helper()
	p := newTab(t)
	p.navigate(path)
	return p
}

// newTab opens an empty tab that records the browser's complaints. It
// shares the browser's cookies (and so the session), unless opts make a
// browser context of its own (chromedp.WithNewBrowserContext()).
func newTab(t testing.TB, opts ...chromedp.ContextOption) *page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, opts...)
	t.Cleanup(cancel)
	p := &page{t: t, ctx: ctx}
	// Listen sees each event as it arrives, before the next command
	// returns: the restart window below is judged at that moment.
	if err := chromedp.Listen(ctx, p.onEvent); err != nil {
		t.Fatal(err)
	}
	p.run(chromedp.EmulateViewport(1280, 800))
	t.Cleanup(p.assertClean) // runs before cancel: cleanups go last in, first out
	return p
}

func (p *page) onEvent(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				if a.Description != "" {
					args = append(args, a.Description)
				} else {
					args = append(args, string(a.Value))
				}
			}
			p.problem(false, "console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		p.problem(false, "uncaught exception at %s:%d: %s", d.URL, d.LineNumber, msg)
	case *cdplog.EventEntryAdded:
		e := ev.Entry
		if e.Level != cdplog.EntryLevelError {
			return
		}
		// Failed reconnects of an event stream while the server is down on
		// purpose: "net::ERR_CONNECTION_REFUSED", the 503 of a server that
		// is starting, "EventSource's response has a MIME type ...".
		// The page also asks whether its session still holds (a 503
		// while the server starts).
		stream := strings.Contains(e.URL, "/events") || strings.Contains(e.Text, "/events") || strings.Contains(e.Text, "EventSource") ||
			strings.Contains(e.URL, "/api/v1/session")
		excused := p.restarting.Load() && stream
		p.mu.Lock()
		for _, part := range p.failing {
			excused = excused || (e.Source == cdplog.EntrySourceNetwork && strings.Contains(e.URL, part))
		}
		for _, part := range p.expected {
			excused = excused || strings.Contains(e.Text, part)
		}
		p.mu.Unlock()
		p.problem(excused, "%s %s: %s %s", e.Source, e.Level, e.Text, e.URL)
	}
}

func (p *page) problem(excused bool, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	if excused {
		p.excused = append(p.excused, msg)
	} else {
		p.problems = append(p.problems, msg)
	}
}

func (p *page) assertClean() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.excused {
		p.t.Logf("expected (the test caused it): %s", e)
	}
	for _, e := range p.problems {
		p.t.Errorf("browser: %s", e)
	}
}

const waitTimeout = 15 * time.Second

// run runs chromedp actions with a timeout, failing the test on error.
func (p *page) run(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := p.runErr(waitTimeout, steps...); err != nil {
		p.t.Fatalf("%v\npage: %s", err, p.describe())
	}
}

func (p *page) runErr(timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, steps...)
}

// logIn opens a session for the page with token, as the login form does
// (POST /session), without the dashboard.
func (p *page) logIn(token string) {
	p.t.Helper()
	if !eval[bool](p, fmt.Sprintf(`fetch('/api/v1/session', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({token: %q})}).then((r) => r.ok)`, token)) {
		p.t.Fatal("could not log the page in")
	}
}

func (p *page) navigate(path string) {
	p.t.Helper()
	p.run(chromedp.Navigate(srv.url+path), chromedp.WaitReady(chromedp.CSS("#main > *")))
}

// waitVisible waits until an element matching the CSS selector is shown.
func (p *page) waitVisible(sel string) {
	p.t.Helper()
	p.waitVisibleFor(sel, waitTimeout)
}

func (p *page) waitVisibleFor(sel string, timeout time.Duration) {
	p.t.Helper()
	if err := p.runErr(timeout, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		p.t.Fatalf("waiting for %s: %v\npage: %s", sel, err, p.describe())
	}
}

// waitGone waits until no element matches the CSS selector.
func (p *page) waitGone(sel string) {
	p.t.Helper()
	if err := p.runErr(waitTimeout, chromedp.WaitNotPresent(chromedp.CSS(sel))); err != nil {
		p.t.Fatalf("waiting for %s to go: %v\npage: %s", sel, err, p.describe())
	}
}

// eventually polls a JavaScript expression until it is true.
func (p *page) eventually(what, expr string) {
	p.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, err := evalErr[bool](p, 5*time.Second, expr)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("timed out waiting for %s (%s): %v\npage: %s", what, expr, err, p.describe())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) on the page.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := evalErr[T](p, waitTimeout, expr)
	if err != nil {
		p.t.Fatalf("evaluate %s: %v\npage: %s", expr, err, p.describe())
	}
	return v
}

func evalErr[T any](p *page, timeout time.Duration, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// text is the text of the first element matching the CSS selector.
func (p *page) text(sel string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`document.querySelector(%q).textContent`, sel))
}

// describe is what the page shows, for failure messages.
func (p *page) describe() string {
	s, err := evalErr[string](p, 3*time.Second, `(() => {
		const conn = document.getElementById('conn');
		const rows = [...document.querySelectorAll('[data-action],[data-run]')]
			.map((r) => (r.dataset.action || r.dataset.run) + ':' + r.dataset.phase);
		return location.pathname + ' conn=' + (conn && conn.dataset.conn) + ' rows=[' + rows.slice(0, 40).join(' ') + (rows.length > 40 ? ' …' : '') + ']';
	})()`)
	if err != nil {
		return "(unavailable: " + err.Error() + ")"
	}
	return s
}

// accessibleNames reads the page's accessibility tree, as assistive
// technology gets it from Chromium: role -> accessible names.
func accessibleNames(p *page) map[string][]string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		p.t.Fatalf("accessibility tree: %v", err)
	}
	out := map[string][]string{}
	for _, n := range tree.Nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		var role, name string
		_ = json.Unmarshal(n.Role.Value, &role)
		if n.Name != nil {
			_ = json.Unmarshal(n.Name.Value, &name)
		}
		out[role] = append(out[role], name)
	}
	return out
}

// API helpers: the tests change the server through its REST API and watch
// the page follow.

var seq atomic.Int64
