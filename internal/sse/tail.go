package sse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// TailSource is a growing byte log (an attempt's stdout) that a stream
// follows.
type TailSource interface {
	// Changed is closed at the next append, or when the log ends. Tail
	// takes it before reading, so no append goes unnoticed.
	Changed() <-chan struct{}
	ReadAt(p []byte, off int64) (int, error)
	// Ended reports that nothing more will be appended, and how many bytes
	// the log dropped; Tail also asks every TailPoll, for ends that come
	// without a change (an executor elsewhere finished the attempt).
	Ended() (ended bool, dropped int64)
}

const (
	// tailChunk bounds the text of one event.
	tailChunk = 64 << 10
	// TailPoll is how often Tail asks a quiet log whether it ended.
	TailPoll = time.Second
)

// Tail streams a log from byte from: `log` events whose data is
// {"offset","text"} and whose id is the offset after the text, so that
// Last-Event-ID resumes at the exact byte; then, once the log ended and
// all of it was sent, `eof` with {"size","dropped"}, and the stream ends.
// Text is never cut inside a UTF-8 sequence (but for invalid bytes at the
// very end of an ended log). A from beyond the log sends `reset` and
// starts at 0: the log is not the one the client read.
func Tail(ctx context.Context, w http.ResponseWriter, from int64, src TailSource, cfg Config) error {
	cfg = cfg.withDefaults()
	setHeaders(w)
	w.WriteHeader(http.StatusOK)
	t := &tail{w: newWriter(w, cfg.writeWindow()), src: src, buf: make([]byte, tailChunk), off: max(from, 0)}
	t.w.begin()
	if t.w.comment("stream open") != nil || t.w.retry(cfg.Retry) != nil || t.checkStart() != nil || t.w.flush() != nil {
		return nil
	}
	ping := time.NewTicker(cfg.Heartbeat)
	defer ping.Stop()
	poll := time.NewTicker(TailPoll)
	defer poll.Stop()
	for {
		changed := src.Changed()
		ended, dropped := src.Ended()
		t.w.begin()
		err := t.send(ended)
		if err == nil && ended {
			data := `{"size":` + strconv.FormatInt(t.off, 10) + `,"dropped":` + strconv.FormatInt(dropped, 10) + `}`
			if t.w.event(strconv.FormatInt(t.off, 10), "eof", []byte(data)) == nil {
				_ = t.w.flush()
			}
			return nil
		}
		if err != nil || t.w.flush() != nil {
			return nil // the client is gone, or the log cannot be read
		}
		select {
		case <-ctx.Done():
			return nil
		case <-cfg.Stop.Done():
			return nil
		case <-changed:
		case <-poll.C:
		case <-ping.C:
			if t.w.comment("ping") != nil {
				return nil
			}
		}
	}
}

type tail struct {
	w   *writer
	src TailSource
	buf []byte
	off int64
}

// checkStart resets a stream whose offset is past the end of the log.
func (t *tail) checkStart() error {
	if t.off == 0 {
		return nil
	}
	if n, _ := t.src.ReadAt(t.buf[:1], t.off-1); n == 1 {
		return nil
	}
	t.off = 0
	return t.w.event("0", "reset", []byte(`{"reason":"offset-beyond-log"}`))
}

// send writes what the log holds past the offset.
func (t *tail) send(ended bool) error {
	for {
		n, err := t.src.ReadAt(t.buf, t.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		chunk := t.buf[:n]
		if !(ended && n < len(t.buf)) {
			chunk = wholeRunes(chunk)
		}
		if len(chunk) == 0 {
			return nil
		}
		if err := t.w.event(strconv.FormatInt(t.off+int64(len(chunk)), 10), "log", logData(t.off, chunk)); err != nil {
			return err
		}
		t.off += int64(len(chunk))
		if n < len(t.buf) {
			return nil
		}
	}
}

// wholeRunes cuts an incomplete UTF-8 sequence off the end of b: the
// rest of it comes with the next read.
func wholeRunes(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b // ASCII: nothing is cut
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

func logData(off int64, text []byte) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Offset int64  `json:"offset"`
		Text   string `json:"text"`
	}{off, string(text)})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
