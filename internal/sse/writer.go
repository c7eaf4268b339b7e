// Package sse serves server-sent-event streams from a journal: the wire
// format, the snapshot-then-live protocol with exact resume, heartbeats and
// write deadlines. It knows journals and HTTP, not what the events mean.
package sse

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// writer writes the SSE wire format to one response.
type writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	scratch []byte
}

func newWriter(w http.ResponseWriter, timeout time.Duration) *writer {
	return &writer{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// begin arms the write deadline for the writes up to the next flush, so a
// peer that stopped reading (or vanished) is dropped instead of holding
// the stream forever.
func (s *writer) begin() {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		// The connection is already gone; the next write reports it.
		return
	}
}

// event writes one event. data must not contain newlines (compact JSON).
func (s *writer) event(id, name string, data []byte) error {
	b := s.scratch[:0]
	b = append(b, "id: "...)
	b = append(b, id...)
	b = append(b, "\nevent: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	s.scratch = b
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	if _, err := s.w.Write(data); err != nil {
		return err
	}
	_, err := s.w.Write([]byte("\n\n"))
	return err
}

func (s *writer) comment(text string) error {
	_, err := s.w.Write([]byte(": " + text + "\n\n"))
	return err
}

func (s *writer) retry(d time.Duration) error {
	_, err := s.w.Write([]byte("retry: " + strconv.FormatInt(d.Milliseconds(), 10) + "\n\n"))
	return err
}

func (s *writer) flush() error {
	err := s.rc.Flush()
	if errors.Is(err, http.ErrNotSupported) {
		return nil
	}
	return err
}
