package sse

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"taskactions/internal/journal"
)

// streamHandler serves a journal's stream, logging to logs.
func streamHandler(j *journal.Journal[string], cfg Config, done func(), logs *lockedBuffer) http.Handler {
	src := itemSource(j)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = Serve(zerolog.New(logs).WithContext(r.Context()), w, src, cfg, Options{Done: done})
	})
}

// parkedServer serves handler over HTTP/2 (TLS), under Parking and a
// middleware that counts the handlers that returned.
func parkedServer(t *testing.T, handler http.Handler) (srv *httptest.Server, returned *atomic.Int32) {
	returned = &atomic.Int32{}
	middleware := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.ServeHTTP(w, r)
		returned.Add(1)
	})
	srv = httptest.NewUnstartedServer(Parking(middleware))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, returned
}

// An HTTP/2 stream cannot leave net/http, so once synced it parks: its
// handler and the middlewares above it return, and the stream goes on
// under Parking, on the same response: live events, pings, and a clean
// end when the server stops, with Done called once and the end logged.
func TestParkedStreamLeavesItsHandler(t *testing.T) {
	j := journal.New[string](journal.Config{})
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done atomic.Int32
	logs := &lockedBuffer{}
	srv, returned := parkedServer(t, streamHandler(j, Config{Heartbeat: 300 * time.Millisecond, Stop: stop}, func() { done.Add(1) }, logs))
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.ProtoMajor != 2 {
		t.Fatalf("served over %s, want HTTP/2", resp.Proto)
	}
	in := linesOf(resp)
	waitFor(t, in, "event: synced")
	eventually(t, func() bool { return returned.Load() == 1 }, "the handler returned once the stream was synced")

	j.Publish(journal.Entry[string]{Cursor: 1, Key: "k", Topics: []string{"t"}, Value: "live"})
	waitFor(t, in, "data: live")
	waitFor(t, in, ": ping")
	if n := done.Load(); n != 0 {
		t.Fatalf("Done called %d times while the parked stream was open", n)
	}

	cancel()
	for l := range in {
		if strings.HasPrefix(l, "!error") {
			t.Errorf("the stream did not end cleanly: %s", l)
		}
	}
	eventually(t, func() bool { return done.Load() == 1 }, "Done called as the stream ended")
	if !strings.Contains(logs.String(), `"mode":"parked"`) || !strings.Contains(logs.String(), "event stream ended") {
		t.Errorf("logged %q; want the parked stream's end", logs.String())
	}
}

// A parked stream whose client goes away ends at once, not at its next
// write: with an hour's heartbeat, nothing would be written.
func TestParkedStreamEndsWhenTheClientGoes(t *testing.T) {
	j := journal.New[string](journal.Config{})
	var done atomic.Int32
	srv, returned := parkedServer(t, streamHandler(j, Config{Heartbeat: time.Hour}, func() { done.Add(1) }, &lockedBuffer{}))
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() }) // before the server's Close, which waits for it
	waitFor(t, linesOf(resp), "event: synced")
	eventually(t, func() bool { return returned.Load() == 1 }, "the stream parked")
	resp.Body.Close() // over HTTP/2: resets the stream, the connection stays
	eventually(t, func() bool { return done.Load() == 1 }, "the stream ended when its client went")
}

// A stream held while the server starts (Hold) parks once the real
// handler has synced it: Hold returns with the rest of the chain.
func TestHeldStreamParks(t *testing.T) {
	j := journal.New[string](journal.Config{})
	var done atomic.Int32
	stream := streamHandler(j, Config{Heartbeat: time.Hour}, func() { done.Add(1) }, &lockedBuffer{})
	ready := make(chan struct{})
	held := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Hold(w, r, ready, func() http.Handler { return stream }, Config{Heartbeat: time.Hour}, time.Minute)
	})
	srv, returned := parkedServer(t, held)
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	in := linesOf(resp)
	waitFor(t, in, ": stream open; the server is starting")
	close(ready)
	waitFor(t, in, "event: synced")
	eventually(t, func() bool { return returned.Load() == 1 }, "Hold and the handler returned once the stream was synced")
	j.Publish(journal.Entry[string]{Cursor: 1, Key: "k", Topics: []string{"t"}, Value: "live"})
	waitFor(t, in, "data: live")
	resp.Body.Close()
	eventually(t, func() bool { return done.Load() == 1 }, "the stream ended when its client went")
}

// Requests that are not streams pass Parking as they came: a handler
// that does not park is not waited for twice, and other methods are not
// touched.
func TestParkingPassesOtherRequests(t *testing.T) {
	srv := httptest.NewServer(Parking(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, parkable := r.Context().Value(parkKey{}).(*parking)
		w.Header().Set("Parkable", map[bool]string{true: "yes", false: "no"}[parkable])
		w.WriteHeader(http.StatusNoContent)
	})))
	t.Cleanup(srv.Close)
	for method, want := range map[string]string{http.MethodGet: "yes", http.MethodPost: "no", http.MethodHead: "no"} {
		req, _ := http.NewRequest(method, srv.URL, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Parkable") != want {
			t.Errorf("%s: %d, parkable %q; want 204, %q", method, resp.StatusCode, resp.Header.Get("Parkable"), want)
		}
	}
}
