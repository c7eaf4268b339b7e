package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestWithRequestID(t *testing.T) {
	tests := []struct {
		name     string
		incoming string
		keep     bool
	}{
		{"sane", "abc-123_XYZ.9", true},
		{"64 chars", strings.Repeat("a", 64), true},
		{"missing", "", false},
		{"too long", strings.Repeat("a", 65), false},
		{"space", "a b", false},
		{"control", "a\x01b", false},
		{"non-ASCII", "réq", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logBuf bytes.Buffer
			var seen string
			h := withRequestID(zerolog.New(&logBuf))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = requestID(r.Context())
				zerolog.Ctx(r.Context()).Info().Msg("inside")
			}))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if tt.incoming != "" {
				r.Header.Set("X-Request-ID", tt.incoming)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)

			echoed := w.Header().Get("X-Request-ID")
			if echoed == "" || echoed != seen {
				t.Fatalf("echoed %q, handler saw %q; want the same, non-empty", echoed, seen)
			}
			if tt.keep != (echoed == tt.incoming) {
				t.Errorf("id = %q for incoming %q; keep = %v", echoed, tt.incoming, tt.keep)
			}
			if !printable(echoed, 64) {
				t.Errorf("id %q is not short and printable", echoed)
			}
			// Every log line of the request carries the id.
			var line struct {
				RequestID string `json:"requestId"`
			}
			if err := json.Unmarshal(logBuf.Bytes(), &line); err != nil || line.RequestID != echoed {
				t.Errorf("log line %q: requestId = %q, want %q (err %v)", logBuf.String(), line.RequestID, echoed, err)
			}
		})
	}
}

// Generated ids must differ, or two requests' logs would merge.
func TestWithRequestIDGeneratesDistinctIDs(t *testing.T) {
	h := withRequestID(zerolog.Nop())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	seen := map[string]bool{}
	for range 100 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		id := w.Header().Get("X-Request-ID")
		if seen[id] {
			t.Fatalf("id %q generated twice", id)
		}
		seen[id] = true
	}
}

func TestRecoverPanics(t *testing.T) {
	tests := []struct {
		name  string
		value any
		leak  string // what of the panic must not reach the client
	}{
		{"string", "db password is hunter2", "hunter2"},
		{"error", fmt.Errorf("open /etc/secret.pem: permission denied"), "secret.pem"},
		{"int", 4242, "4242"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logBuf bytes.Buffer
			h := withRequestID(zerolog.New(&logBuf))(recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				panic(tt.value)
			})))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("X-Request-ID", "req-panic")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)

			if w.Code != http.StatusInternalServerError {
				t.Errorf("status = %d, want 500", w.Code)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var p Problem
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if p.Instance == nil || !strings.Contains(*p.Instance, "req-panic") {
				t.Errorf("instance = %v, want the request id", p.Instance)
			}
			if strings.Contains(w.Body.String(), tt.leak) || strings.Contains(w.Body.String(), "goroutine") {
				t.Errorf("body leaks the panic: %s", w.Body)
			}
			if !strings.Contains(logBuf.String(), "handler panicked") || !strings.Contains(logBuf.String(), tt.leak) {
				t.Errorf("panic not logged: %s", logBuf.String())
			}
		})
	}
}

// http.ErrAbortHandler is how a handler asks net/http to drop the
// connection; turning it into a 500 would defeat it.
func TestRecoverPanicsRepanicsAbortHandler(t *testing.T) {
	h := recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("recovered %v, want http.ErrAbortHandler", v)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	t.Error("ServeHTTP returned normally")
}

// The request is in its context while the handler runs, and let go when
// it returns: a parked stream keeps that context for hours.
func TestKeepRequestLetsGoWhenTheHandlerReturns(t *testing.T) {
	kept := make(chan context.Context, 1)
	srv := httptest.NewServer(keepRequest(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := requestFrom(r.Context()); got == nil || got.URL.Path != "/logs" {
			t.Errorf("while the handler runs, requestFrom gave %v, want the request", got)
		}
		kept <- r.Context()
	})))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/logs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := requestFrom(<-kept); got != nil {
		t.Errorf("after the handler returned, the context still holds the request (%s)", got.URL)
	}
}
