package sse

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

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
	// Observer, when set, is told how streams start (for metrics).
	Observer Observer
}

// Observer learns how each stream of an event kind started: a snapshot
// (a first connect), a resume (the cursor was replayed from the
// journal), or a reset with its reason (the cursor was not covered; the
// stream lagged, a slow reader whose mailbox overflowed).
type Observer interface {
	StreamStarted(event string, resumed bool, reset string)
}

// The reasons of a reset, as the reset event gives them.
const (
	ResetNotCovered = "cursor-not-covered" // the journal no longer reaches back to the cursor
	ResetLagged     = "lagged"             // the reader fell behind its mailbox
)

// Options are one stream's own.
type Options struct {
	// LastEventID is the client's cursor (Last-Event-ID, or the
	// lastEventId query parameter), empty on a first connect.
	LastEventID string
	// Detach lets the stream leave net/http once it is synced (see
	// detach). Only for an HTTP/1.1 request: its body is chunked.
	Detach bool
	// Done, when set, is called once the stream has ended: when Serve
	// returns or, for a stream that detached or parked, later.
	Done func()
	// End, when set, ends the stream once it is done (a logout ended the
	// session it was opened with), wherever it runs.
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
	// A nil subscription says the snapshot cannot be built now (a store
	// that does not answer): the stream ends before synced, and the
	// client's EventSource comes back after the retry hint, instead of
	// taking a part for the whole.
	Open func(ctx context.Context, after *uint64) (sub *journal.Subscription[V], start journal.Start[V], snapshot []V)
	// Encode returns the event data; it should memoize, since one value goes
	// to every subscriber. A live event's whole wire form is built once
	// and shared by every stream with the same Event name (see
	// journal.Entry.Framed), so the Sources of one journal that share an
	// Event name must share Encode too.
	Encode  func(V) []byte
	Cursors Cursors
	// Keep, when set, leaves out the items it refuses (those the caller
	// may not read, or a filter's), from the snapshot and the live events
	// alike; but a live event whose previous value it kept is sent (see
	// journal.Entry.Prev), so that a client drops what left the filter.
	// The two values of one event are of one object, so what only hides
	// what the caller may not read hides both.
	Keep func(V) bool
	// Window, when set, cuts a snapshot (of what Keep keeps) to a first
	// view: the items to send, and a token for the rest ("" when none is
	// left), which synced carries as "continue". A replay is not cut.
	Window func([]V) (shown []V, more string)
}

func (src Source[V]) keep(v V) bool { return src.Keep == nil || src.Keep(v) }

// keepEntry keeps a live event whose value Keep keeps, or whose previous
// value it kept: the change that takes an object out of what the stream
// keeps is sent, for the client to drop it.
func (src Source[V]) keepEntry(e journal.Entry[V]) bool {
	return src.keep(e.Value) || (e.HasPrev && src.keep(e.Prev))
}

// reset and the snapshot items carry cursor 0, which no journal covers: a
// client cut off in the middle of a snapshot comes back with it and gets a
// new snapshot, never a resume that would skip what it did not receive.
// synced carries the real cursor.
const snapshotCursor = 0

// Serve streams src to w until the client goes, the server shuts down or a
// write fails; or, for a stream that detaches or parks, until it is
// synced.
//
// An idle stream is a goroutine parked in follow for hours, and Go shrinks
// its stack only when less than a quarter of it is in use: the frames
// under follow's wait are kept few and small, and the work with many
// locals (opening, sending) is done in functions that return before the
// stream goes idle.
func Serve[V any](ctx context.Context, w http.ResponseWriter, src Source[V], cfg Config, opt Options) error {
	s := &stream[V]{src: src, ctx: ctx, end: opt.End, done: opt.Done}
	if s.done == nil {
		s.done = func() {}
	}
	if !s.start(w, opt.LastEventID, &cfg) {
		if s.sub != nil {
			s.sub.Close()
		}
		s.done()
		return nil
	}
	if opt.Detach && cfg.Detached != nil && s.detach(w, cfg.Detached) {
		return nil
	}
	s.w.goBare()
	if !s.park() {
		follow(s)
	}
	return nil
}

// start writes the headers and how the stream starts (see open); false
// when the client is gone.
//
//go:noinline
func (s *stream[V]) start(w http.ResponseWriter, lastEventID string, given *Config) bool {
	cfg := given.withDefaults()
	s.heartbeat, s.stop, s.observer = cfg.Heartbeat, cfg.Stop, cfg.Observer
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
	return s.open(after, asked, ResetNotCovered) == nil
}

// follower is a stream from its sync on, as follow drives it. follow is
// not a method of the generic stream: a generic method called through a
// func value or an interface adds a frame (which finds its dictionary)
// under every idle stream.
type follower interface {
	// arm sets up what wakes the stream besides its events (see watch).
	arm()
	ready() <-chan struct{}
	// wake sends what there is to send; an error ends the stream.
	wake() error
	// ended cleans up after follow, however it ended (a panic included).
	ended(panicked any)
}

// follow is a stream from synced to its end. It waits on one channel, its
// subscription's, as the bare broadcaster does: what else can end or wake
// it (the request's end, the server's stop, a logout, the heartbeat) wakes
// the subscription (see watch). A select would cost more, in CPU per event
// per stream and in stack under every idle stream.
//
//go:noinline
func follow(f follower) {
	defer finish(f)
	f.arm()
	for {
		<-f.ready()
		if f.wake() != nil {
			return // nothing more to tell the client, or no client
		}
	}
}

func finish(f follower) { f.ended(recover()) }

func (s *stream[V]) arm() {
	s.since = time.Now()
	s.lastWrite = s.since
	s.watch()
}

func (s *stream[V]) ready() <-chan struct{} { return s.sub.Ready() }

// watch has the end of the request (the client gone), the server's stop
// and a logout of the stream's session mark the stream left and wake its
// subscription, and arms the heartbeat. A lag, which replaces the
// subscription, watches again.
func (s *stream[V]) watch() {
	sub := s.sub
	leave := func() {
		s.left.Store(true)
		sub.Wake()
	}
	s.unwatch[0] = context.AfterFunc(s.ctx, leave)
	s.unwatch[1] = context.AfterFunc(s.stop, leave)
	if s.end != nil {
		s.unwatch[2] = context.AfterFunc(s.end, leave)
	}
	s.armBeat()
}

func (s *stream[V]) stopWatching() {
	for i, stop := range s.unwatch {
		if stop != nil {
			stop()
			s.unwatch[i] = nil
		}
	}
	if s.beat != nil {
		s.beat.Stop()
	}
}

// ended cleans up after follow. A panic is logged: the response has
// begun, so there is nothing else to do with it.
func (s *stream[V]) ended(p any) {
	if p != nil {
		zerolog.Ctx(s.ctx).Error().Interface("panic", p).Bytes("stack", debug.Stack()).Msg("event stream panicked")
	}
	s.stopWatching()
	s.sub.Close() // the last one: a lag reopens it
	if c, ok := s.w.out.(*chunkedConn); ok {
		_ = c.end()
	}
	if s.how != "" {
		zerolog.Ctx(s.ctx).Debug().Str("mode", s.how).Dur("durationMs", time.Since(s.since)).Msg("event stream ended")
	}
	s.done()
}

// errLeft ends a stream that was left (see watch).
var errLeft = errors.New("the stream was left")

// errNoSnapshot: the source could not build the snapshot (see Source.Open).
var errNoSnapshot = errors.New("the snapshot cannot be read now")

// wake sends what the subscription has (or, if the stream fell behind,
// starts it over), then the heartbeat if it is due.
//
//go:noinline
func (s *stream[V]) wake() error {
	if s.left.Load() {
		return errLeft
	}
	var err error
	var lagged bool
	s.buf, lagged = s.sub.Drain(s.buf[:0])
	switch {
	case lagged:
		s.sub.Close()
		s.stopWatching()
		if err = s.open(nil, true, ResetLagged); err == nil {
			s.watch()
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
	w   *writer
	src Source[V]
	// ctx is the request's (for a detached stream, one that ends when the
	// client goes): its values (the logger, the subject) serve the stream.
	ctx       context.Context
	sub       *journal.Subscription[V]
	buf       []journal.Entry[V] // what a wake drains, kept between wakes
	heartbeat time.Duration
	observer  Observer
	beat      *time.Timer
	beatDue   atomic.Bool     // the timer fired since the last wake
	left      atomic.Bool     // the client went, the server stops or the session ended
	unwatch   [3]func() bool  // watch's, to stop them
	stop      context.Context // Config.Stop
	end       context.Context // Options.End
	done      func()          // Options.Done
	lastWrite time.Time       // of the last flush
	// how the stream left its handler ("detached", "parked"; empty: it
	// did not), and since when.
	how   string
	since time.Time
}

func (s *stream[V]) flush() error {
	s.lastWrite = time.Now()
	return s.w.flush()
}

// open subscribes and writes how the stream starts: the replay of missed
// events, or (after a reset when the client asked for a cursor) the
// snapshot; then synced.
func (s *stream[V]) open(after *uint64, asked bool, why string) error {
	sub, start, snapshot := s.subscribe(after)
	if sub == nil {
		return errNoSnapshot
	}
	s.sub = sub
	cursors := s.src.Cursors
	s.w.begin()
	count, more := len(snapshot), ""
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
		kept := snapshot
		if s.src.Keep != nil {
			kept = make([]V, 0, len(snapshot))
			for _, v := range snapshot {
				if s.src.keep(v) {
					kept = append(kept, v)
				}
			}
		}
		if s.src.Window != nil {
			kept, more = s.src.Window(kept)
		}
		count = len(kept)
		for _, v := range kept {
			if err := s.w.event(zero, s.src.Event, s.src.Encode(v)); err != nil {
				return err
			}
		}
	}
	if s.observer != nil {
		reset := ""
		if asked && !start.Resumed {
			reset = why
		}
		s.observer.StreamStarted(s.src.Event, start.Resumed, reset)
	}
	data := `{"resumed":` + strconv.FormatBool(start.Resumed) + `,"count":` + strconv.Itoa(count)
	if more != "" {
		token, _ := json.Marshal(more) // a string always encodes
		data += `,"continue":` + string(token)
	}
	data += `}`
	if err := s.w.event(cursors.FormatCursor(start.Cursor), "synced", []byte(data)); err != nil {
		return err
	}
	return s.flush()
}

// subscribe calls src.Open on a goroutine of its own, and waits. Building
// a snapshot can go deep (a read of the history store runs SQLite, C
// translated to Go, with large frames), and the stack a goroutine grows
// to stays with it until collections shrink it, by half at each. A panic
// is passed on to the caller, for the server's recovery to handle as any
// other.
func (s *stream[V]) subscribe(after *uint64) (sub *journal.Subscription[V], start journal.Start[V], snapshot []V) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		sub, start, snapshot = s.src.Open(s.ctx, after)
	}()
	if p := <-done; p != nil {
		panic(p)
	}
	return sub, start, snapshot
}

func (s *stream[V]) send(entries []journal.Entry[V]) error {
	s.w.begin()
	for _, e := range entries {
		if !s.src.keepEntry(e) {
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
