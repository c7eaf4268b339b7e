package sse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
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

// Tail streams a log from the byte a cursor names (lastEventID, the
// offset of the first byte not read yet; empty for 0): `log` events whose
// data is {"offset","text"} and whose id is the offset after the text, so
// that Last-Event-ID resumes at the exact byte; then, once the log ended
// and all of it was sent, `eof` with {"size","dropped"}, and the stream
// ends. Text is never cut inside a UTF-8 sequence (but for invalid bytes
// at the very end of an ended log), so a cursor inside one (after a
// ranged GET that ended there) starts at the sequence's first byte: the
// event's offset says so, and the client keeps the bytes before it. A
// cursor beyond the log, or one that is not an offset, sends `reset` and
// starts at 0: the client cannot know what it has, so it starts over,
// told.
func Tail(ctx context.Context, w http.ResponseWriter, lastEventID string, src TailSource, cfg Config) error {
	cfg = cfg.withDefaults()
	setHeaders(w)
	w.WriteHeader(http.StatusOK)
	t := &tail{w: newWriter(w, cfg.writeWindow()), src: src, buf: make([]byte, tailChunk)}
	t.w.begin()
	if t.w.comment("stream open") != nil || t.w.retry(cfg.Retry) != nil || t.start(lastEventID) != nil || t.w.flush() != nil {
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
		endRequestSpan(ctx)
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

// start sets the offset the cursor names: reset to 0 (and said so) when
// it is not an offset or is past the end of the log, moved back to the
// first byte of a UTF-8 sequence it falls inside.
func (t *tail) start(cursor string) error {
	if cursor == "" {
		return nil
	}
	off, err := strconv.ParseInt(cursor, 10, 64)
	if err != nil || off < 0 {
		return t.reset("malformed-cursor")
	}
	if off == 0 {
		return nil
	}
	// The bytes around the offset: the one before it must exist, and a
	// sequence begun before it may run past it.
	back := min(off, utf8.UTFMax-1)
	around := t.buf[:back+utf8.UTFMax-1]
	n, _ := t.src.ReadAt(around, off-back)
	if int64(n) < back {
		return t.reset("offset-beyond-log")
	}
	t.off = off - int64(cutSequence(around[:back], around[back:n]))
	return nil
}

// cutSequence is how many bytes at the end of before begin a UTF-8
// sequence that after (what the log holds past them, perhaps not all of
// it yet) continues: 0 when before ends on a character's boundary, or
// when the bytes are no character at all (those are replaced in any case).
func cutSequence(before, after []byte) int {
	cut := len(before) - len(wholeRunes(before))
	if cut == 0 {
		return 0
	}
	seq := append(slices.Clip(before[len(before)-cut:]), after...)
	if r, size := utf8.DecodeRune(seq); utf8.FullRune(seq) && r == utf8.RuneError && size == 1 {
		return 0
	}
	return cut
}

func (t *tail) reset(why string) error {
	t.off = 0
	return t.w.event("0", "reset", []byte(`{"reason":"`+why+`"}`))
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

// endRequestSpan ends the request's span (when tracing is on) once the
// tail sent what the log held: a tail stays in its handler for as long as
// it follows (it neither detaches nor parks), and a span open that long is
// held in memory and shown by no backend until it ends. Its status is the
// 200 already sent; the stream's end is in the access log. Ending an ended
// span does nothing, so the later rounds and the middleware's own End are
// harmless.
func endRequestSpan(ctx context.Context) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", http.StatusOK))
		span.End()
	}
}
