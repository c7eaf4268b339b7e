package sse

import (
	"net/http"
	"time"
)

// Hold serves a stream request that arrives before the server can serve
// it (its cache is not synced yet, after a restart): 200 and the stream's
// opening at once, a ping every heartbeat while it waits, then next (the
// real handler, once ready is closed) on the same response, as if the
// request had arrived then: next resumes from the request's Last-Event-ID
// or sends a reset and a snapshot. A plain EventSource treats any answer
// but 200 as final and never reconnects; this keeps it connected.
//
// The wait is bounded: past wait, or when cfg.Stop is done, the stream ends
// and the client reconnects by itself. If next answers an error after all
// (the request was bad), the stream ends without it; the reconnect gets it.
func Hold(w http.ResponseWriter, r *http.Request, ready <-chan struct{}, next func() http.Handler, cfg Config, wait time.Duration) {
	cfg = cfg.withDefaults()
	setHeaders(w)
	w.WriteHeader(http.StatusOK)
	sw := newWriter(w, cfg.writeWindow())
	sw.begin()
	if sw.comment("stream open; the server is starting") != nil || sw.retry(cfg.Retry) != nil || sw.flush() != nil {
		return
	}
	ping := time.NewTicker(cfg.Heartbeat)
	defer ping.Stop()
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		select {
		case <-ready:
			next().ServeHTTP(&committed{ResponseWriter: w, header: http.Header{}}, r)
			return
		case <-ping.C:
			sw.begin()
			if sw.comment("ping") != nil || sw.flush() != nil {
				return
			}
		case <-timeout.C:
			return
		case <-cfg.Stop.Done():
			return
		case <-r.Context().Done():
			return
		}
	}
}

// WriteHead answers a HEAD request for a stream: the status and headers a
// GET would begin with, and nothing more.
func WriteHead(w http.ResponseWriter) {
	setHeaders(w)
	w.WriteHeader(http.StatusOK)
}

func setHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
}

// committed is a response whose status and headers are already sent (200,
// an event stream). What the handler sets again goes nowhere; an error
// status means the stream must end, so its body goes nowhere too.
type committed struct {
	http.ResponseWriter
	header http.Header
	failed bool
}

func (c *committed) Header() http.Header { return c.header }

func (c *committed) WriteHeader(code int) {
	if code != http.StatusOK {
		c.failed = true
	}
}

func (c *committed) Write(b []byte) (int, error) {
	if c.failed {
		return len(b), nil
	}
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flush, write
// deadlines).
func (c *committed) Unwrap() http.ResponseWriter { return c.ResponseWriter }
