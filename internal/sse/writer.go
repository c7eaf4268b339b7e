// Package sse serves server-sent-event streams from a journal: the wire
// format, the snapshot-then-live protocol with exact resume, heartbeats and
// write deadlines. It knows journals and HTTP, not what the events mean.
package sse

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// writer writes the SSE wire format to one response.
type writer struct {
	out      sink
	timeout  time.Duration
	deadline time.Time // the write deadline armed last
	scratch  *[]byte   // from scratchPool between begin and flush
}

// scratchPool holds the buffers events are built in. A stream takes one
// for a batch of writes and gives it back at the flush, so that idle
// streams (most of them) hold none.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func newWriter(w http.ResponseWriter, timeout time.Duration) *writer {
	return &writer{out: responseSink{w, http.NewResponseController(w)}, timeout: timeout}
}

// sink is where a writer's bytes go: the response, through net/http, or
// the connection itself once the stream has left net/http (chunkedConn).
type sink interface {
	Write([]byte) (int, error)
	Flush() error
	SetWriteDeadline(time.Time) error
}

type responseSink struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (r responseSink) Flush() error                       { return r.rc.Flush() }
func (r responseSink) SetWriteDeadline(t time.Time) error { return r.rc.SetWriteDeadline(t) }

// bareSink writes to the response under the middlewares' wrappers (the
// access log's byte counter, the stream hold's): every write and flush
// of a live event would pass each of them, and a ResponseController finds
// the flush by unwrapping them again at every flush.
type bareSink struct {
	http.ResponseWriter
	flush func() error
	rc    *http.ResponseController
}

func (b bareSink) Flush() error                       { return b.flush() }
func (b bareSink) SetWriteDeadline(t time.Time) error { return b.rc.SetWriteDeadline(t) }

// goBare has the writer write to the response itself from now on, when it
// can reach it (see bareSink). The stream calls it once it is synced: the
// access log's line then counts the bytes up to there, as it does for a
// stream that detaches. The wrappers it passes by only look at the bytes;
// one that changed them (compression) would have to stop it.
func (s *writer) goBare() {
	r, ok := s.out.(responseSink)
	if !ok {
		return
	}
	w := r.ResponseWriter
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	if f, ok := w.(interface{ FlushError() error }); ok {
		s.out = bareSink{ResponseWriter: w, flush: f.FlushError, rc: http.NewResponseController(w)}
	}
}

// begin arms the write deadline for the writes up to the next flush, so a
// peer that stopped reading (or vanished) is dropped instead of holding
// the stream forever: within timeout (the window), at least timeout/2
// after begin. The deadline is moved only once half of it has passed,
// because moving it costs a lock and a timer update per event per stream
// (8% of the server's CPU under fan-out when it was moved every time).
func (s *writer) begin() {
	now := time.Now()
	if s.deadline.Sub(now) > s.timeout/2 {
		return
	}
	s.deadline = now.Add(s.timeout)
	if err := s.out.SetWriteDeadline(s.deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
		// The connection is already gone; the next write reports it.
		return
	}
}

// event writes one event. data must not contain newlines (compact JSON).
// It is one Write: each passes the middlewares' wrappers and a lock of
// the connection.
func (s *writer) event(id, name string, data []byte) error {
	if s.scratch == nil {
		s.scratch = scratchPool.Get().(*[]byte)
	}
	b := appendEvent((*s.scratch)[:0], id, name, data)
	if cap(b) <= maxScratch {
		*s.scratch = b
	}
	_, err := s.out.Write(b)
	return err
}

// raw writes an event already in wire form (appendEvent).
func (s *writer) raw(event []byte) error {
	_, err := s.out.Write(event)
	return err
}

// appendEvent appends an event in wire form to b.
func appendEvent(b []byte, id, name string, data []byte) []byte {
	b = append(b, "id: "...)
	b = append(b, id...)
	b = append(b, "\nevent: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// maxScratch bounds the buffers kept in the pool; a bigger event gets one
// of its own.
const maxScratch = 4 << 10

func (s *writer) comment(text string) error {
	_, err := s.out.Write([]byte(": " + text + "\n\n"))
	return err
}

func (s *writer) retry(d time.Duration) error {
	_, err := s.out.Write([]byte("retry: " + strconv.FormatInt(d.Milliseconds(), 10) + "\n\n"))
	return err
}

func (s *writer) flush() error {
	if s.scratch != nil {
		scratchPool.Put(s.scratch)
		s.scratch = nil
	}
	err := s.out.Flush()
	if errors.Is(err, http.ErrNotSupported) {
		return nil
	}
	return err
}
