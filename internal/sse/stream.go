package sse

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"taskactions/internal/journal"
)

// Config of every stream.
type Config struct {
	// Heartbeat is the interval of ": ping" comments (default 15s), which
	// keep proxies from closing an idle stream.
	Heartbeat time.Duration
	// Retry is the reconnection delay hinted to clients (default 2s).
	Retry time.Duration
	// WriteTimeout is how long a write may wait for a peer that stopped
	// reading (default 10s). Such a stream is dropped within
	// WriteTimeout + 2×Heartbeat (see writeWindow).
	WriteTimeout time.Duration
	// Stop ends every stream when it is done: the server is shutting down,
	// and clients reconnect (and resume) against the next one.
	Stop context.Context
	// Detached counts the streams that left net/http (see detach), for
	// the server's shutdown to wait on; nil: streams never detach.
	Detached *sync.WaitGroup
}

// Options are one stream's own.
type Options struct {
	// LastEventID is the client's cursor (Last-Event-ID, or the
	// lastEventId query parameter), empty on a first connect.
	LastEventID string
	// Detach lets the stream leave net/http once it is synced (see
	// detach). Only for an HTTP/1.1 request: its body is chunked.
	Detach bool
	// Done, when set, is called once the stream has ended: when Serve
	// returns or, for a stream that detached, later.
	Done func()
	// End, when set, ends the stream once it is done (a logout ended the
	// session it was opened with), detached or not.
	End context.Context
}

// writeWindow is how far ahead a stream's write deadline is set. Over
// HTTP/2 a write deadline resets the stream when it passes, whether or not
// a write is waiting, so an idle stream's deadline must outlast the next
// heartbeat: the deadline is moved once half the window has passed, and
// half the window exceeds a heartbeat.
func (c Config) writeWindow() time.Duration { return c.WriteTimeout + 2*c.Heartbeat }

func (c Config) withDefaults() Config {
	if c.Heartbeat <= 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.Retry <= 0 {
		c.Retry = 2 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 10 * time.Second
	}
	if c.Stop == nil {
		c.Stop = context.Background()
	}
	return c
}

// Cursors renders and reads stream cursors (a journal does).
type Cursors interface {
	FormatCursor(uint64) string
	ParseCursor(string) (uint64, bool)
}

// Source is one kind of stream.
type Source[V any] struct {
	// Event is the SSE event name of the items ("action", "run").
	Event string
	// Open subscribes, resuming after a cursor when it can (see
	// journal.Subscribe); without a resume, snapshot is the current state.
	Open func(ctx context.Context, after *uint64) (sub *journal.Subscription[V], start journal.Start[V], snapshot []V)
	// Encode returns the event data; it should memoize, since one value goes
	// to every subscriber. A live event's whole wire form is built once
	// and shared by every stream with the same Event name (see
	// journal.Entry.Framed), so the Sources of one journal that share an
	// Event name must share Encode too.
	Encode  func(V) []byte
	Cursors Cursors
	// Keep, when set, leaves out the items it refuses (those the caller
	// may not read), from the snapshot and the live events alike.
	Keep func(V) bool
}

func (src Source[V]) keep(v V) bool { return src.Keep == nil || src.Keep(v) }

// reset and the snapshot items carry cursor 0, which no journal covers: a
// client cut off in the middle of a snapshot comes back with it and gets a
// new snapshot, never a resume that would skip what it did not receive.
// synced carries the real cursor.
const snapshotCursor = 0

// Serve streams src to w until the client goes, the server shuts down or a
// write fails; or, for a stream that detaches, until it is synced.
//
// An idle stream is a goroutine parked in run's select for hours, and Go
// shrinks its stack only when less than a quarter of it is in use: the
// frames under the select (Serve, run, the handlers and middlewares that
// called them) are kept small, and the work with many locals (opening,
// sending) is done in functions that return before the stream goes idle.
func Serve[V any](ctx context.Context, w http.ResponseWriter, src Source[V], cfg Config, opt Options) error {
	done := opt.Done
	if done == nil {
		done = func() {}
	}
	s := &stream[V]{src: src, end: opt.End}
	if !s.start(ctx, w, opt.LastEventID, &cfg) {
		if s.sub != nil {
			s.sub.Close()
		}
		done()
		return nil
	}
	if opt.Detach && cfg.Detached != nil && s.detach(ctx, w, cfg.Detached, done) {
		return nil
	}
	defer done()
	defer func() { s.sub.Close() }() // the last one: a lag reopens it
	s.w.goBare()
	s.run(ctx)
	return nil
}

// start writes the headers and how the stream starts (see open); false
// when the client is gone.
//
//go:noinline
func (s *stream[V]) start(ctx context.Context, w http.ResponseWriter, lastEventID string, given *Config) bool {
	cfg := given.withDefaults()
	s.heartbeat, s.stop = cfg.Heartbeat, cfg.Stop
	setHeaders(w)
	w.WriteHeader(http.StatusOK)
	s.w = newWriter(w, cfg.writeWindow())
	s.w.begin()
	// A comment at once, so that proxies pass the headers on now.
	if err := s.w.comment("stream open"); err != nil {
		return false
	}
	if err := s.w.retry(cfg.Retry); err != nil {
		return false
	}
	var after *uint64
	asked := lastEventID != ""
	if c, ok := s.src.Cursors.ParseCursor(lastEventID); asked && ok {
		after = &c
	}
	return s.open(ctx, after, asked, "cursor-not-covered") == nil
}

// run waits on two channels, as the bare broadcaster does: the end of the
// request (the client gone, the server stopping, or a logout of the
// session, folded into ctx) and
// the subscription. A select costs more with every case, and it runs per
// event per stream. The heartbeat wakes the subscription through a timer,
// and is sent only after Heartbeat without a write.
func (s *stream[V]) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.stop, cancel)()
	if s.end != nil {
		defer context.AfterFunc(s.end, cancel)()
	}
	s.lastWrite = time.Now()
	s.armBeat()
	defer func() { s.beat.Stop() }()
	done := ctx.Done()
	for {
		select {
		case <-done:
			return
		case <-s.sub.Ready():
		}
		if s.wake(ctx) != nil {
			return // the client is gone; nothing to tell it
		}
	}
}

// wake sends what the subscription has (or, if the stream fell behind,
// starts it over), then the heartbeat if it is due.
//
//go:noinline
func (s *stream[V]) wake(ctx context.Context) error {
	var err error
	var lagged bool
	s.buf, lagged = s.sub.Drain(s.buf[:0])
	switch {
	case lagged:
		s.sub.Close()
		if err = s.open(ctx, nil, true, "lagged"); err == nil {
			s.beat.Stop()
			s.armBeat()
		}
	case len(s.buf) > 0:
		err = s.send(s.buf)
		clear(s.buf) // let the values go
	}
	if err != nil {
		return err
	}
	if !s.beatDue.Swap(false) {
		return nil
	}
	return s.beatIfDue()
}

// armBeat starts the heartbeat's timer, which marks the beat due and wakes
// the subscription of now. A write does not move it (that was a timer
// update per event per stream): when it fires, beatIfDue sends the ping or,
// if something was written since, arms it for the rest of the heartbeat.
func (s *stream[V]) armBeat() {
	sub := s.sub
	s.beat = time.AfterFunc(s.heartbeat, func() {
		s.beatDue.Store(true)
		sub.Wake()
	})
}

// beatIfDue sends a ping when nothing was written for a heartbeat, and
// arms the timer for the next one.
func (s *stream[V]) beatIfDue() error {
	idle := time.Since(s.lastWrite)
	if idle < s.heartbeat {
		s.beat.Reset(s.heartbeat - idle)
		return nil
	}
	s.w.begin()
	if err := s.w.comment("ping"); err != nil {
		return err
	}
	s.beat.Reset(s.heartbeat)
	return s.flush()
}

type stream[V any] struct {
	w         *writer
	src       Source[V]
	sub       *journal.Subscription[V]
	buf       []journal.Entry[V] // what a wake drains, kept between wakes
	heartbeat time.Duration
	beat      *time.Timer
	beatDue   atomic.Bool     // the timer fired since the last wake
	stop      context.Context // Config.Stop
	end       context.Context // Options.End
	lastWrite time.Time       // of the last flush
}

func (s *stream[V]) flush() error {
	s.lastWrite = time.Now()
	return s.w.flush()
}

// open subscribes and writes how the stream starts: the replay of missed
// events, or (after a reset when the client asked for a cursor) the
// snapshot; then synced.
func (s *stream[V]) open(ctx context.Context, after *uint64, asked bool, why string) error {
	sub, start, snapshot := s.subscribe(ctx, after)
	s.sub = sub
	cursors := s.src.Cursors
	s.w.begin()
	count := len(snapshot)
	if start.Resumed {
		count = len(start.Replay)
		if err := s.send(start.Replay); err != nil {
			return err
		}
	} else {
		zero := cursors.FormatCursor(snapshotCursor)
		if asked {
			if err := s.w.event(zero, "reset", []byte(`{"reason":"`+why+`"}`)); err != nil {
				return err
			}
		}
		count = 0
		for _, v := range snapshot {
			if !s.src.keep(v) {
				continue
			}
			count++
			if err := s.w.event(zero, s.src.Event, s.src.Encode(v)); err != nil {
				return err
			}
		}
	}
	data := `{"resumed":` + strconv.FormatBool(start.Resumed) + `,"count":` + strconv.Itoa(count) + `}`
	if err := s.w.event(cursors.FormatCursor(start.Cursor), "synced", []byte(data)); err != nil {
		return err
	}
	return s.flush()
}

// subscribe calls src.Open on a goroutine of its own, and waits. Building
// a snapshot can go deep (a read of the history store runs SQLite, C
// translated to Go, with large frames), and the stack a goroutine grows
// to stays with it: the stream's goroutine would idle on 32 KiB instead of
// 16 until enough collections shrink it. A panic is passed on to the
// caller, for the server's recovery to handle as any other.
func (s *stream[V]) subscribe(ctx context.Context, after *uint64) (sub *journal.Subscription[V], start journal.Start[V], snapshot []V) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		sub, start, snapshot = s.src.Open(ctx, after)
	}()
	if p := <-done; p != nil {
		panic(p)
	}
	return sub, start, snapshot
}

func (s *stream[V]) send(entries []journal.Entry[V]) error {
	s.w.begin()
	for _, e := range entries {
		if !s.src.keep(e.Value) {
			continue
		}
		// Built once per event for every stream of this kind.
		ev := e.Framed(s.src.Event, func() []byte {
			return appendEvent(nil, s.src.Cursors.FormatCursor(e.Cursor), s.src.Event, s.src.Encode(e.Value))
		})
		if err := s.w.raw(ev); err != nil {
			return err
		}
	}
	return s.flush()
}
