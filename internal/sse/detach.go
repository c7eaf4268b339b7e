package sse

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Once an HTTP/1.1 stream is synced it leaves net/http: the connection is
// hijacked and the stream goes on in a goroutine of its own, writing its
// chunked body straight to the connection, and the handler returns. An
// idle stream then costs its subscription and a goroutine parked on a
// shallow stack, instead of net/http's goroutine (under every middleware),
// its connection reader and its buffers: at 10,000 idle streams that is
// most of the server's memory. Each event batch is one chunk in one write.
//
// What changes for a detached stream: the access log records the request
// when the stream is synced, and a second line ("event stream ended", with
// the same requestId) its end; and the server's shutdown waits for
// detached streams through Config.Detached, which http.Server cannot do.

// detach hands the stream to a goroutine of its own, on the hijacked
// connection, and reports whether it did (HTTP/2 cannot hijack).
//
//go:noinline
func (s *stream[V]) detach(w http.ResponseWriter, streams *sync.WaitGroup) bool {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	s.w.out = &chunkedConn{conn: conn}
	// The request's context ends when the handler returns; its values (the
	// logger, the subject) stay.
	ctx, gone := context.WithCancel(context.WithoutCancel(s.ctx))
	s.ctx, s.how = ctx, "detached"
	go awaitClose(conn, gone)
	streams.Add(1)
	go func() {
		defer streams.Done()
		defer conn.Close()
		follow(s)
	}()
	return true
}

// awaitClose waits on a read of the connection, which is how a client
// that went away is noticed between writes (as net/http's reader of a
// connection does), then calls gone. A stream's client has nothing more to
// send: a byte it does send ends the stream too (reading on, a byte at a
// time, would give a hostile client a syscall per byte). The stream's end
// closes the connection, which ends the read.
func awaitClose(conn net.Conn, gone context.CancelFunc) {
	var b [1]byte
	_, _ = conn.Read(b[:])
	gone()
}

// chunkedConn writes an HTTP/1.1 chunked body to a connection: what is
// written between flushes goes out as one chunk, in one write. The
// pending bytes are in a pooled buffer, so an idle stream holds none.
type chunkedConn struct {
	conn net.Conn
	buf  *[]byte // chunkRoom bytes of room for the chunk's size line, then the data
}

// chunkRoom fits the size line of any chunk: up to 8 hex digits and CRLF.
const chunkRoom = 10

func (c *chunkedConn) Write(p []byte) (int, error) {
	if c.buf == nil {
		c.buf = scratchPool.Get().(*[]byte)
		*c.buf = (*c.buf)[:chunkRoom] // pooled buffers hold at least 1 KiB
	}
	*c.buf = append(*c.buf, p...)
	return len(p), nil
}

func (c *chunkedConn) Flush() error {
	if c.buf == nil {
		return nil
	}
	b := *c.buf
	defer c.release()
	size := len(b) - chunkRoom
	if size == 0 {
		return nil
	}
	var line [chunkRoom]byte
	l := append(strconv.AppendUint(line[:0], uint64(size), 16), '\r', '\n')
	start := chunkRoom - len(l)
	copy(b[start:], l)
	b = append(b, '\r', '\n')
	_, err := c.conn.Write(b[start:])
	*c.buf = b
	return err
}

func (c *chunkedConn) release() {
	if cap(*c.buf) <= maxScratch {
		scratchPool.Put(c.buf)
	}
	c.buf = nil
}

func (c *chunkedConn) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }

// end writes the last chunk, which ends the body cleanly.
func (c *chunkedConn) end() error {
	_, err := c.conn.Write([]byte("0\r\n\r\n"))
	return err
}
