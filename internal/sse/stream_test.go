package sse

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"taskactions/internal/journal"
)

// streamServer serves a journal of strings on topic "t" over a real
// listener.
func streamServer(t *testing.T, j *journal.Journal[string], cfg Config) *httptest.Server {
	src := Source[string]{
		Event: "item",
		Open: func(_ context.Context, after *uint64) (*journal.Subscription[string], journal.Start[string], []string) {
			sub, start := j.Subscribe("t", after, func() uint64 { return 0 })
			return sub, start, nil
		},
		Encode:  func(v string) []byte { return []byte(v) },
		Cursors: j,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = Serve(r.Context(), w, r.Header.Get("Last-Event-ID"), src, cfg)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// lines reads a stream's lines into a channel until it ends.
func lines(t *testing.T, url string) <-chan string {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan string, 1024)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
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
// it is idle again; stopping the server ends it.
func TestServeEventsHeartbeatAndStop(t *testing.T) {
	j := journal.New[string](journal.Config{})
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := streamServer(t, j, Config{Heartbeat: time.Second, Stop: stop})
	in := lines(t, srv.URL)
	waitFor(t, in, "event: synced")
	waitFor(t, in, ": ping")

	// Events every 20 ms for half a second: no ping among them.
	go func() {
		for i := range 25 {
			j.Publish(journal.Entry[string]{Cursor: uint64(i + 1), Key: "k", Topics: []string{"t"}, Value: "v"})
			time.Sleep(20 * time.Millisecond)
		}
		j.Publish(journal.Entry[string]{Cursor: 26, Key: "k", Topics: []string{"t"}, Value: "last"})
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
		for range in {
		}
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived the server's stop")
	}
}

// Over HTTP/2 a write deadline resets the stream when it passes, even
// with no write waiting. An idle stream whose heartbeat is longer than the
// write timeout (the defaults: 15s and 10s) must live on by its pings.
func TestIdleHTTP2StreamOutlivesTheWriteTimeout(t *testing.T) {
	j := journal.New[string](journal.Config{})
	cfg := Config{Heartbeat: 300 * time.Millisecond, WriteTimeout: 100 * time.Millisecond}
	srv := httptest.NewUnstartedServer(streamServer(t, j, cfg).Config.Handler)
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
