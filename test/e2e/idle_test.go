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
// only while less than a quarter of it is in use. The frames under the
// park (net/http, the middlewares, the handler, the stream loop) must stay
// small enough for it to shrink to 16 KiB: at 32 KiB, 10,000 idle streams
// hold 160 MB more. The streams are read by hand over raw connections, so
// that the client's goroutines do not count.
func TestIdleStreamStacksStaySmall(t *testing.T) {
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
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", u.RequestURI(), u.Host, srv.token)
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
	t.Logf("goroutine stacks: %.1f KiB per idle stream", perStream)
	// 16 KiB for the handler's goroutine, a few for net/http's reader of
	// the connection; 36 KiB when the frames are too deep to shrink.
	if perStream > 26 {
		t.Errorf("%.1f KiB of goroutine stack per idle stream, want at most 26: the frames under an idle stream grew", perStream)
	}
}
