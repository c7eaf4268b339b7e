package browser

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/heapprofiler"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"taskactions/pkg/client"
)

// enqueueProcess enqueues a process action running a shell script.
func enqueueProcess(t testing.TB, run client.RunIdentifier, name, script string, retries int32) {
	t.Helper()
	cmd := []string{"sh", "-c", script}
	spec := client.ActionSpec{
		ActionId: client.ActionIdentifier{Run: run, Name: name},
		Task: client.TaskSpec{TaskTemplate: client.TaskTemplate{Type: "process",
			Container: &client.Container{Command: &cmd}, Metadata: &client.TaskMetadata{Retries: &retries}}},
	}
	resp, err := srv.api.EnqueueActionWithResponse(context.Background(), client.EnqueueRequest{Action: spec})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode() != http.StatusCreated {
		t.Fatalf("enqueue %s: HTTP %d %s", name, resp.StatusCode(), resp.Body)
	}
}

func logFile(t testing.TB, run client.RunIdentifier, action string, attempt int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(srv.dataDir, "outputs", run.Project, run.Domain, run.Name, action, fmt.Sprintf("stdout-%d.log", attempt)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (p *page) openLogs(run client.RunIdentifier, action string) {
	p.navigate(runPath(run) + "#action=" + action)
	p.waitVisible(`#tab-logs`)
	p.run(chromedp.Click(chromedp.CSS(`#tab-logs`)))
	p.waitVisible(`#log-text`)
}

// A process prints 100,000 lines while the Logs tab follows it: the page
// keeps up (the last line is on screen when the attempt ends), stays at
// the bottom, keeps only the tail, and with "Load earlier" shows the
// whole file, byte for byte.
func TestLogsTabFollowsAHundredThousandLines(t *testing.T) {
	run := newRun()
	enqueueProcess(t, run, "big", `sleep 2; seq -f 'line %06g of a long log, padded to look like real output' 1 100000`, 0)
	p := newTab(t)
	p.openLogs(run, "big")
	p.eventually("the log to end", `document.getElementById('log-status').dataset.state === 'ended'`)
	file := logFile(t, run, "big", 1)
	if !strings.HasSuffix(eval[string](p, `document.getElementById('log-text').textContent`), "line 100000 of a long log, padded to look like real output\n") {
		t.Fatal("the last line is not on the page when the log ends")
	}
	if !eval[bool](p, `(() => { const e = document.getElementById('log-text'); return e.scrollHeight - e.scrollTop - e.clientHeight < 4; })()`) {
		t.Error("the view is not at the bottom of the log while following")
	}
	if shown := eval[int](p, `new TextEncoder().encode(document.getElementById('log-text').textContent).length`); shown >= len(file) || shown > 2<<20 {
		t.Errorf("following a %d-byte log keeps %d bytes on the page, want its tail of at most 2 MiB", len(file), shown)
	}
	for i := 0; eval[bool](p, `!document.getElementById('log-earlier').hidden`); i++ {
		if i > 20 {
			t.Fatal("Load earlier never reaches the start")
		}
		before := eval[int](p, `document.getElementById('log-text').textContent.length`)
		p.run(chromedp.Click(chromedp.CSS(`#log-earlier`)))
		p.eventually("earlier text", fmt.Sprintf(`document.getElementById('log-text').textContent.length > %d`, before))
	}
	if got := eval[string](p, `document.getElementById('log-text').textContent`); got != file {
		t.Fatalf("the page shows %d bytes, the file has %d: they differ", len(got), len(file))
	}
	p.assertClean()
}

// While a log grows, scrolling up stops the auto-scroll and Follow brings
// it back; attempts can be switched, and the download link is the log.
func TestLogsTabScrollAttemptsAndDownload(t *testing.T) {
	run := newRun()
	// Attempt 1 fails at once; attempt 2 prints a line every 20 ms for
	// about 6 s.
	enqueueProcess(t, run, "retry", `if [ -e tried ]; then for i in $(seq 1 300); do echo "second attempt, line $i"; sleep 0.02; done; else touch tried; echo "first attempt"; exit 3; fi`, 1)
	p := newTab(t)
	p.openLogs(run, "retry")
	p.eventually("attempt 2 to be followed", `document.getElementById('log-attempt').value === '2' && document.getElementById('log-text').textContent.includes('second attempt, line 20\n')`)
	p.run(chromedp.EmulateViewport(1280, 700))
	p.eventually("the log to scroll", `(() => { const e = document.getElementById('log-text'); return e.scrollHeight > e.clientHeight + 50; })()`)
	eval[bool](p, `(() => { const e = document.getElementById('log-text'); e.scrollTop = 0; e.dispatchEvent(new Event('scroll')); return true; })()`)
	p.waitVisible(`#log-follow`)
	before := eval[int](p, `document.getElementById('log-text').textContent.length`)
	p.eventually("more lines", fmt.Sprintf(`document.getElementById('log-text').textContent.length > %d + 200`, before))
	if top := eval[float64](p, `document.getElementById('log-text').scrollTop`); top != 0 {
		t.Errorf("after the user scrolled up, new lines moved the view to %v", top)
	}
	p.run(chromedp.Click(chromedp.CSS(`#log-follow`)))
	p.eventually("the view back at the bottom", `(() => { const e = document.getElementById('log-text'); return e.scrollHeight - e.scrollTop - e.clientHeight < 4; })()`)
	p.eventually("the log to end", `document.getElementById('log-status').dataset.state === 'ended'`)
	if got := eval[string](p, `document.getElementById('log-text').textContent`); got != logFile(t, run, "retry", 2) {
		t.Errorf("attempt 2 on the page differs from its file (%d bytes)", len(got))
	}

	// Attempt 1, chosen by the user.
	eval[bool](p, `(() => { const s = document.getElementById('log-attempt'); s.value = '1'; s.dispatchEvent(new Event('change')); return true; })()`)
	p.eventually("attempt 1's log", `document.getElementById('log-text').textContent === 'first attempt\n' && document.getElementById('log-status').dataset.state === 'ended'`)
	download := eval[string](p, `(async () => { const a = document.getElementById('log-download'); return a.download + '|' + await (await fetch(a.href)).text(); })()`)
	if download != "retry-attempt1.stdout.log|first attempt\n" {
		t.Errorf("download link: %q", download)
	}
	// Phones: the Logs tab fits the screen.
	p.run(chromedp.EmulateViewport(360, 800))
	if overflow := eval[int](p, `document.documentElement.scrollWidth - window.innerWidth`); overflow > 0 {
		t.Errorf("Logs tab at 360px: the page is %dpx wider than the screen", overflow)
	}
	p.assertClean()
}

// The home page lists the projects and domains with runs, and a new one
// appears without a reload, with its run count.
func TestHomeListsProjectsLive(t *testing.T) {
	first := newRun()
	enqueue(t, first, "a", "")
	p := openPage(t, "/")
	sel := func(r client.RunIdentifier) string {
		return fmt.Sprintf(`#projects a[data-project="%s/%s"]`, r.Project, r.Domain)
	}
	p.waitVisible(sel(first))
	second := newRun()
	enqueue(t, second, "a", "")
	p.waitVisible(sel(second))
	another := client.RunIdentifier{Project: second.Project, Domain: second.Domain, Name: second.Name + "x"}
	enqueue(t, another, "a", "")
	p.eventually("two runs counted", fmt.Sprintf(`document.querySelector(%q).textContent.includes('2 runs')`, sel(second)))
	if href := eval[string](p, fmt.Sprintf(`document.querySelector(%q).getAttribute('href')`, sel(second))); href != fmt.Sprintf("/projects/%s/domains/%s", second.Project, second.Domain) {
		t.Errorf("the project links to %q", href)
	}
	p.assertClean()
}

// BenchmarkLogLineToScreen: a task prints a line with its wall-clock time
// every 20 ms; the page following its log notes when each line's text
// enters the DOM. Reports the delay from the write to the screen, p50 and
// p99, over ~250 lines per iteration.
func BenchmarkLogLineToScreen(b *testing.B) {
	var all []float64
	for i := 0; i < b.N; i++ {
		run := newRun()
		enqueueProcess(b, run, "clock", `sleep 1; for i in $(seq 1 250); do echo "t=$(date +%s%N)"; sleep 0.02; done`, 0)
		p := newTab(b)
		p.navigate(runPath(run) + "#action=clock")
		p.waitVisible(`#tab-logs`)
		p.run(chromedp.Click(chromedp.CSS(`#tab-logs`)))
		p.waitVisible(`#log-text`)
		eval[bool](p, `(() => {
			window.lineDelays = [];
			const seen = new Set();
			new MutationObserver((ms) => {
				const now = Date.now();
				for (const m of ms) for (const n of m.addedNodes) {
					for (const x of (n.textContent || '').matchAll(/t=(\d+)\n/g)) {
						if (seen.has(x[1])) continue;
						seen.add(x[1]);
						window.lineDelays.push(now - Number(x[1]) / 1e6);
					}
				}
			}).observe(document.getElementById('log-text'), { childList: true, subtree: true });
			return true;
		})()`)
		p.eventually("the log to end", `document.getElementById('log-status').dataset.state === 'ended'`)
		all = append(all, eval[[]float64](p, `window.lineDelays`)...)
	}
	sort.Float64s(all)
	if len(all) == 0 {
		b.Fatal("no line seen")
	}
	b.ReportMetric(all[len(all)/2], "p50-ms")
	b.ReportMetric(all[len(all)*99/100], "p99-ms")
	b.ReportMetric(float64(len(all))/float64(b.N), "lines/op")
}

// BenchmarkLogPageMemory: the JavaScript heap of a run page whose Logs
// tab followed a 10 MiB log to its end, after a garbage collection, next
// to the same page on an empty log (the baseline, same tab).
func BenchmarkLogPageMemory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		run := newRun()
		enqueueProcess(b, run, "empty", `true`, 0)
		// 169,126 lines of 62 bytes: 10 MiB and a little.
		enqueueProcess(b, run, "big", `sleep 2; seq -f 'line %06g of a long log, padded to look like real output' 1 169126`, 0)
		p := newTab(b)
		p.openLogs(run, "empty")
		p.eventually("the empty log to end", `document.getElementById('log-status').dataset.state === 'ended'`)
		base, baseRSS := heapUsed(p), rendererRSS(b)
		p.openLogs(run, "big")
		p.eventually("the log to end", `document.getElementById('log-status').dataset.state === 'ended'`)
		if got := eval[int](p, `document.getElementById('log-text').textContent.length`); got == 0 {
			b.Fatal("nothing followed")
		}
		after, afterRSS := heapUsed(p), rendererRSS(b)
		b.ReportMetric(base/(1<<20), "js-heap-before-MiB")
		b.ReportMetric(after/(1<<20), "js-heap-after-MiB")
		b.ReportMetric(baseRSS/(1<<20), "renderer-rss-before-MiB")
		b.ReportMetric(afterRSS/(1<<20), "renderer-rss-after-MiB")
		b.ReportMetric(float64(eval[int](p, `new TextEncoder().encode(document.getElementById('log-text').textContent).length`))/(1<<20), "text-kept-MiB")
	}
}

// heapUsed is the page's JavaScript heap and Blink's garbage-collected
// heap in use, after a collection.
func heapUsed(p *page) float64 {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, waitTimeout)
	defer cancel()
	if _, err := chromedp.Call(ctx, heapprofiler.CollectGarbage, cdp.Empty{}); err != nil {
		p.t.Fatal(err)
	}
	u, err := chromedp.Call(ctx, cdpruntime.GetHeapUsage, cdp.Empty{})
	if err != nil {
		p.t.Fatal(err)
	}
	return u.UsedSize + u.EmbedderHeapUsedSize
}

// rendererRSS sums the resident memory of Chromium's renderer processes
// (the benchmark's tab is the only page open): DOM text lives outside
// both heaps above.
func rendererRSS(b *testing.B) float64 {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var sum float64
	for _, d := range dirs {
		cmd, err := os.ReadFile(d + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), "--type=renderer") {
			continue
		}
		status, err := os.ReadFile(d + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			var kb float64
			if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kb); err == nil {
				sum += kb * 1024
			}
		}
	}
	if sum == 0 {
		b.Fatal("no Chromium renderer process found")
	}
	return sum
}
