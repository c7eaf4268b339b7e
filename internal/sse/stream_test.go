package sse

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"taskactions/internal/journal"
)

// itemSource streams j's topic "t" as "item" events.
func itemSource(j *journal.Journal[string]) Source[string] {
	return Source[string]{
		Event: "item",
		Open: func(_ context.Context, after *uint64) (*journal.Subscription[string], journal.Start[string], []string) {
			sub, start := j.Subscribe("t", after, func() uint64 { return 0 })
			return sub, start, nil
		},
		Encode:  func(v string) []byte { return []byte(v) },
		Cursors: j,
	}
}

// streamServer serves a journal of strings on topic "t" over a real
// listener, over TLS if asked; HTTP/1.1 streams detach when cfg.Detached
// is set, and done is called as each stream ends.
func streamServer(t *testing.T, j *journal.Journal[string], cfg Config, useTLS bool, done func()) (srv *httptest.Server, hijacked *atomic.Int32, logs *lockedBuffer) {
	src := itemSource(j)
	logs = &lockedBuffer{}
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opt := Options{LastEventID: r.Header.Get("Last-Event-ID"), Detach: r.ProtoMajor == 1 && r.ProtoMinor == 1, Done: done}
		_ = Serve(zerolog.New(logs).WithContext(r.Context()), w, src, cfg, opt)
	}))
	hijacked = &atomic.Int32{}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateHijacked {
			hijacked.Add(1)
		}
	}
	if useTLS {
		srv.StartTLS() // HTTP/1.1 over TLS: the server does not enable HTTP/2
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, hijacked, logs
}

// lockedBuffer is a log sink that streams' goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines reads a stream's lines into a channel until it ends.
func lines(t *testing.T, c *http.Client, url string) <-chan string {
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return linesOf(resp)
}

// linesOf reads a response's lines into a channel until it ends.
func linesOf(resp *http.Response) <-chan string {
	out := make(chan string, 1024)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			out <- sc.Text()
		}
		if sc.Err() != nil {
			out <- "!error: " + sc.Err().Error()
		}
	}()
	return out
}

// waitFor reads lines until one has prefix, failing on the stream's end
// or after a generous bound (a hang, not a speed check).
func waitFor(t *testing.T, in <-chan string, prefix string) []string {
	t.Helper()
	var seen []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-in:
			if !ok {
				t.Fatalf("stream ended before %q; read %q", prefix, seen)
			}
			seen = append(seen, l)
			if strings.HasPrefix(l, prefix) {
				return seen
			}
		case <-timeout:
			t.Fatalf("no %q; read %q", prefix, seen)
		}
	}
}

// An idle stream pings; a busy one sends its events, and pings only once
// it is idle again; stopping the server ends it, cleanly. The same with the
// stream detached from net/http once synced.
func TestServeEventsHeartbeatAndStop(t *testing.T) {
	t.Run("in net/http", func(t *testing.T) { testHeartbeatAndStop(t, nil, false) })
	t.Run("detached", func(t *testing.T) { testHeartbeatAndStop(t, &sync.WaitGroup{}, false) })
	t.Run("detached, over TLS", func(t *testing.T) { testHeartbeatAndStop(t, &sync.WaitGroup{}, true) })
}

func testHeartbeatAndStop(t *testing.T, detached *sync.WaitGroup, useTLS bool) {
	j := journal.New[string](journal.Config{})
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Int32
	srv, hijacked, logs := streamServer(t, j, Config{Heartbeat: time.Second, Stop: stop, Detached: detached}, useTLS, func() { done.Add(1) })
	in := lines(t, srv.Client(), srv.URL)
	waitFor(t, in, "event: synced")
	if detached != nil {
		eventually(t, func() bool { return hijacked.Load() == 1 }, "the stream's connection hijacked once synced")
	}
	waitFor(t, in, ": ping")

	// Events every 20 ms for a second and a half: no ping among them,
	// though the heartbeat's timer fires once while they flow.
	go func() {
		for i := range 75 {
			j.Publish(journal.Entry[string]{Cursor: uint64(i + 1), Key: "k", Topics: []string{"t"}, Value: "v"})
			time.Sleep(20 * time.Millisecond)
		}
		j.Publish(journal.Entry[string]{Cursor: 76, Key: "k", Topics: []string{"t"}, Value: "last"})
	}()
	seen := waitFor(t, in, "data: last")
	for _, l := range seen {
		if l == ": ping" {
			t.Fatalf("a ping while events flowed every 20 ms (heartbeat 1 s): %q", seen)
		}
	}
	waitFor(t, in, ": ping")

	cancel()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for l := range in {
			if strings.HasPrefix(l, "!error") {
				t.Errorf("the stream did not end cleanly: %s", l)
			}
		}
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived the server's stop")
	}
	if detached != nil {
		detached.Wait() // a leak hangs here
	}
	eventually(t, func() bool { return done.Load() == 1 }, "Done called once as the stream ended")
	if n := done.Load(); n != 1 {
		t.Errorf("Done called %d times", n)
	}
	if detached == nil && hijacked.Load() != 0 {
		t.Error("a stream not allowed to detach was hijacked")
	}
	if ended := strings.Contains(logs.String(), "event stream ended"); ended != (detached != nil) {
		t.Errorf("logged %q; want the end of a detached stream logged (and only that)", logs.String())
	}
}

func eventually(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("never: " + what)
		}
	}
}

// Over HTTP/2 a write deadline resets the stream when it passes, even
// with no write waiting. An idle stream whose heartbeat is longer than the
// write timeout (the defaults: 15s and 10s) must live on by its pings.
func TestIdleHTTP2StreamOutlivesTheWriteTimeout(t *testing.T) {
	j := journal.New[string](journal.Config{})
	cfg := Config{Heartbeat: 300 * time.Millisecond, WriteTimeout: 100 * time.Millisecond}
	plain, _, _ := streamServer(t, j, cfg, false, nil)
	srv := httptest.NewUnstartedServer(plain.Config.Handler)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("served over %s, want HTTP/2", resp.Proto)
	}
	sc := bufio.NewScanner(resp.Body)
	pings := 0
	for pings < 5 && sc.Scan() {
		if sc.Text() == ": ping" {
			pings++
		}
	}
	if pings < 5 {
		t.Fatalf("the idle stream ended after %d pings: %v", pings, sc.Err())
	}
}

// A detached stream whose client goes away ends at once, not at its next
// write: with an hour's heartbeat, nothing would be written.
func TestDetachedStreamEndsWhenTheClientGoes(t *testing.T) {
	j := journal.New[string](journal.Config{})
	var done atomic.Int32
	detached := &sync.WaitGroup{}
	srv, hijacked, _ := streamServer(t, j, Config{Heartbeat: time.Hour, Detached: detached}, false, func() { done.Add(1) })
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "event: synced") {
	}
	eventually(t, func() bool { return hijacked.Load() == 1 }, "the stream detached")
	resp.Body.Close()
	eventually(t, func() bool { return done.Load() == 1 }, "the stream ended when its client went")
	detached.Wait()
}

// countingWriter is a middleware's wrapper, as the access log's is.
type countingWriter struct {
	http.ResponseWriter
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.ResponseWriter.Write(p)
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Once synced, a stream in net/http writes and flushes its live events
// to the response itself, not through the middlewares' wrappers; they
// see the stream up to synced.
func TestLiveEventsBypassTheWrappers(t *testing.T) {
	j := journal.New[string](journal.Config{})
	src := itemSource(j)
	counted := make(chan *countingWriter, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w}
		counted <- cw
		_ = Serve(r.Context(), cw, src, Config{Heartbeat: time.Hour}, Options{})
	}))
	t.Cleanup(srv.Close)
	in := lines(t, srv.Client(), srv.URL)
	waitFor(t, in, "event: synced")
	cw := <-counted
	before := cw.n.Load()
	if before == 0 {
		t.Fatal("the wrapper saw nothing of the stream's opening")
	}
	j.Publish(journal.Entry[string]{Cursor: 1, Key: "k", Topics: []string{"t"}, Value: "live"})
	waitFor(t, in, "data: live") // flushed without the wrapper
	if after := cw.n.Load(); after != before {
		t.Errorf("the wrapper counted %d bytes of live events", after-before)
	}
}
