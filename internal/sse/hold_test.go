package sse

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A held stream answers 200 at once and pings while it waits; once ready,
// the real handler's stream follows on the same response. A real handler
// that refuses (an error status) ends the stream without writing into it;
// so does the bound on the wait.
func TestHold(t *testing.T) {
	stream := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "event: synced\ndata: {}\n\n")
	})
	refuse := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"status":403}`)
	})
	for _, tc := range []struct {
		name     string
		next     http.Handler
		readyIn  time.Duration
		wait     time.Duration
		want     []string
		wantNone []string
	}{
		{"served once ready", stream, 60 * time.Millisecond, time.Minute, []string{": stream open", "retry: ", ": ping", "event: synced"}, nil},
		{"refused once ready", refuse, 10 * time.Millisecond, time.Minute, []string{": stream open"}, []string{"403", "event:"}},
		{"never ready", stream, time.Hour, 80 * time.Millisecond, []string{": stream open"}, []string{"event:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready := make(chan struct{})
			timer := time.AfterFunc(tc.readyIn, func() { close(ready) })
			defer timer.Stop()
			w := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, "/events", nil)
			Hold(w, r, ready, func() http.Handler { return tc.next }, Config{Heartbeat: 20 * time.Millisecond}, tc.wait)
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" {
				t.Fatalf("answered %d %s, want 200 text/event-stream", w.Code, w.Header().Get("Content-Type"))
			}
			body := w.Body.String()
			last := -1
			for _, s := range tc.want {
				i := strings.Index(body, s)
				if i < 0 || i < last {
					t.Fatalf("body lacks %q in order:\n%s", s, body)
				}
				last = i
			}
			for _, s := range tc.wantNone {
				if strings.Contains(body, s) {
					t.Errorf("body has %q:\n%s", s, body)
				}
			}
		})
	}
}
