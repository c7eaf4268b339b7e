package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"
)

// An idle stream is a goroutine parked for hours; Go shrinks its stack
// only while less than a quarter of it is in use. A stream that stays in
// net/http (HTTP/2, or here HTTP/1.0) parks under net/http, the
// middlewares, the handler and the stream loop: those frames must stay
// small enough for its stack to shrink to 16 KiB (at 32 KiB, 10,000 idle
// streams hold 160 MB more). An HTTP/1.1 stream detaches from net/http
// once synced and parks on two shallow stacks. The streams are read by
// hand over raw connections, so that the client's goroutines do not count.
func TestIdleStreamStacksStaySmall(t *testing.T) {
	t.Run("HTTP/1.0, in net/http", func(t *testing.T) { testIdleStacks(t, "HTTP/1.0", 26) })
	t.Run("HTTP/1.1, detached", func(t *testing.T) { testIdleStacks(t, "HTTP/1.1", 12) })
}

// testIdleStacks opens 200 idle streams over proto and checks the growth
// of goroutine stacks per stream (KiB) against most.
func testIdleStacks(t *testing.T, proto string, most float64) {
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	u, err := url.Parse(actionStreamURL(srv, run, "a0"))
	if err != nil {
		t.Fatal(err)
	}
	stacks := func() uint64 {
		for range 3 { // each collection halves a stack at most once
			runtime.GC()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.StackInuse
	}
	before := stacks()
	const streams = 200
	for range streams {
		c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET %s %s\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", u.RequestURI(), proto, u.Host, srv.token)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before synced: %v", err)
			}
			if strings.HasPrefix(line, "event: synced") {
				break
			}
		}
	}
	perStream := float64(stacks()-before) / streams / 1024
	t.Logf("%s: goroutine stacks %.1f KiB per idle stream", proto, perStream)
	// In net/http: 16 KiB for the handler's goroutine, a few for net/http's
	// reader of the connection; 36 KiB when the frames are too deep to
	// shrink. Detached: some 4 KiB for each of two goroutines.
	if perStream > most {
		t.Errorf("%.1f KiB of goroutine stack per idle stream, want at most %.0f: the frames under an idle stream grew", perStream, most)
	}
}
