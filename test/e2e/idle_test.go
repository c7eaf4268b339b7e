package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"taskactions/internal/app"
	"taskactions/test/testserver"
)

// An idle stream is a goroutine parked for hours; Go shrinks its stack
// only while less than a quarter of it is in use. A stream that stays in
// net/http (HTTP/2, or here HTTP/1.0) parks at the top of its goroutine
// once synced (sse.Parking), under net/http's frames and a few of its
// own: few enough for collections to shrink the stack to 4 KiB over
// HTTP/2 (8 KiB if one frame more, 16 before it parked). An HTTP/1.1
// stream detaches from net/http once synced and parks on two shallow
// stacks. The streams are read by hand over raw connections (one for all
// HTTP/2 streams, framed by hand), so that the client's goroutines do not
// count.
func TestIdleStreamStacksStaySmall(t *testing.T) {
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	u, err := url.Parse(actionStreamURL(srv, run, "a0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("HTTP/1.0, parked", func(t *testing.T) {
		testIdleStacks(t, "HTTP/1.0", 14, func(n int) { openHTTP1Streams(t, u, "HTTP/1.0", n) })
	})
	t.Run("HTTP/1.1, detached", func(t *testing.T) {
		testIdleStacks(t, "HTTP/1.1", 12, func(n int) { openHTTP1Streams(t, u, "HTTP/1.1", n) })
	})
	t.Run("HTTP/2, parked", func(t *testing.T) {
		// A replica of its own serves TLS, and with it HTTP/2.
		certFile, keyFile, pool := testserver.SelfSignedCert(t)
		replica, err := startServer(t.TempDir(), func(c *app.Config) {
			c.Kubeconfig = filepath.Join(srv.dataDir, "kubeconfig")
			c.ExecutorTaskTypes = ""
			c.TLSCert, c.TLSKey = certFile, keyFile
		})
		if err != nil {
			t.Fatal(err)
		}
		defer replica.Stop()
		ru, err := url.Parse(actionStreamURL(replica, run, "a0"))
		if err != nil {
			t.Fatal(err)
		}
		testIdleStacks(t, "HTTP/2", 6, func(n int) { openHTTP2Streams(t, ru, pool, replica.token, n) })
	})
}

// testIdleStacks opens 200 idle streams with open and checks the growth
// of goroutine stacks per stream (KiB) against most.
func testIdleStacks(t *testing.T, proto string, most float64, open func(n int)) {
	before := settledStacks(t)
	const streams = 200
	open(streams)
	perStream := float64(settledStacks(t)-before) / streams / 1024
	t.Logf("%s: goroutine stacks %.1f KiB per idle stream", proto, perStream)
	if perStream > most {
		t.Errorf("%.1f KiB of goroutine stack per idle stream, want at most %.0f: the frames under an idle stream grew", perStream, most)
	}
}

// settledStacks is the goroutine stack in use, once two readings half a
// second apart agree within 64 KiB (0.3 KiB per stream): the servers of
// earlier tests stopping, and a new replica starting, end goroutines of
// their own, whose stacks would count against the streams.
func settledStacks(t *testing.T) int64 {
	stacks := func() int64 {
		for range 3 { // each collection halves a stack at most once
			runtime.GC()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return int64(ms.StackInuse)
	}
	last := stacks()
	for range 60 {
		time.Sleep(500 * time.Millisecond)
		now := stacks()
		if d := now - last; d > -64<<10 && d < 64<<10 {
			return now
		}
		last = now
	}
	t.Fatal("the goroutine stacks in use did not settle in 30 s")
	return 0
}

// openHTTP1Streams opens n streams of u over HTTP/1.x, a connection each,
// and reads each to its synced event.
func openHTTP1Streams(t *testing.T, u *url.URL, proto string, n int) {
	for range n {
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
}

// openHTTP2Streams opens n streams of u over one HTTP/2 connection (TLS,
// certificates from pool; the server's token), framed by hand, and reads
// each to its synced event.
func openHTTP2Streams(t *testing.T, u *url.URL, pool *x509.CertPool, token string, n int) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", u.Host, &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	must(t, fr.WriteSettings())
	must(t, fr.WriteWindowUpdate(0, 1<<30)) // the connection's window: the streams' openings need more than 64 KiB
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for i := range n {
		block.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", u.Host}, {":path", u.RequestURI()},
			{"authorization", "Bearer " + token}, {"accept", "text/event-stream"}} {
			must(t, enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
		}
		must(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true}))
	}
	synced := map[uint32]bool{}
	for len(synced) < n {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("%d of %d streams synced: %v", len(synced), n, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				must(t, fr.WriteSettingsAck())
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				must(t, fr.WritePing(true, f.Data))
			}
		case *http2.DataFrame:
			if bytes.Contains(f.Data(), []byte("event: synced")) {
				synced[f.StreamID] = true
			}
			if f.StreamEnded() {
				t.Fatalf("stream %d ended before synced: %q", f.StreamID, f.Data())
			}
		case *http2.RSTStreamFrame:
			t.Fatalf("stream %d reset: %v", f.StreamID, f.ErrCode)
		case *http2.GoAwayFrame:
			t.Fatalf("the server went away: %v", f.ErrCode)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
