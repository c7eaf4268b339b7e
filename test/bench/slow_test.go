package bench

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSlowReader: 1,000 readers of one parent at full speed, first
// alone, then beside a reader that takes one byte a second through a
// 4 KiB receive buffer. Reported: the others' p99 with the slow reader
// against without (goal: unchanged, ≤ 1.25x, the noise of two runs on
// this machine), and how much the server's RSS grew while the slow
// reader was open.
func BenchmarkSlowReader(b *testing.B) {
	const readers = 1000
	tr := func() *http.Transport { return &http.Transport{} }
	_, s := startSplit(b)
	alone := measure(b, serverTarget(b, s, tr, 0), readers)

	t := serverTarget(b, s, tr, 1)
	rss0 := s.rssBytes(b)
	read, closed := slowReader(b, s, t.stream)
	beside := measure(b, t, readers)
	grew := (s.rssBytes(b) - rss0) / (1 << 20)
	b.Logf("slow reader: %d bytes read, cut off by the server: %v; server RSS grew %.1f MiB", read.Load(), closed.Load(), grew)
	goal(b, "p99-with-slow/alone", beside.p99/alone.p99, 1.25, false)
	b.ReportMetric(grew, "rss-growth-MiB")
}

// slowReader opens the stream at url on a connection with a 4 KiB receive
// buffer and reads one byte a second until the benchmark ends or the
// server closes it.
func slowReader(b *testing.B, s *server, stream string) (read *atomic.Int64, closed *atomic.Bool) {
	u, err := url.Parse(stream)
	must(b, err)
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	conn, err := d.Dial("tcp", u.Host)
	must(b, err)
	b.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", u.RequestURI(), u.Host, s.token)
	must(b, err)
	read, closed = &atomic.Int64{}, &atomic.Bool{}
	go func() {
		r := bufio.NewReaderSize(conn, 16)
		for {
			if _, err := r.ReadByte(); err != nil {
				closed.Store(true)
				return
			}
			read.Add(1)
			time.Sleep(time.Second)
		}
	}()
	return read, closed
}
