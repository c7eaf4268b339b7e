package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"taskactions/internal/taskactions"
)

func TestProblemFor(t *testing.T) {
	field := "attempt"
	invalid := &invalidRequest{
		detail: "the request does not match the API schema",
		params: []InvalidParam{{Pointer: &field, Detail: "must be >= 1"}},
	}
	tests := []struct {
		name       string
		err        error
		status     int
		wantErrors int // len(Problem.Errors); -1 means the field must be absent
	}{
		{"invalid request", invalid, http.StatusBadRequest, 1},
		{"wrapped invalid request", fmt.Errorf("validate: %w", invalid), http.StatusBadRequest, 1},
		{"invalid request without params", &invalidRequest{detail: "bad"}, http.StatusBadRequest, -1},
		{"body too large", &http.MaxBytesError{Limit: MaxBodyBytes}, http.StatusRequestEntityTooLarge, -1},
		{"wrapped body too large", fmt.Errorf("read: %w", &http.MaxBytesError{Limit: MaxBodyBytes}), http.StatusRequestEntityTooLarge, -1},
		{"bad request", badRequest{errors.New("unexpected EOF")}, http.StatusBadRequest, -1},
		// A bad request outranks what it wraps: the client caused it.
		{"bad request wrapping not found", badRequest{taskactions.ErrNotFound}, http.StatusBadRequest, -1},
		{"manager invalid", fmt.Errorf("parent a9: %w", taskactions.ErrInvalid), http.StatusBadRequest, -1},
		{"manager not found", taskactions.ErrNotFound, http.StatusNotFound, -1},
		{"wrapped not found", fmt.Errorf("action a0: %w", taskactions.ErrNotFound), http.StatusNotFound, -1},
		{"notFound helper", notFound("run p/d/r"), http.StatusNotFound, -1},
		{"route not found", errRouteNotFound, http.StatusNotFound, -1},
		{"method not allowed", errMethodNotAllowed, http.StatusMethodNotAllowed, -1},
		{"conflict", fmt.Errorf("attempt 1 < 2: %w", taskactions.ErrConflict), http.StatusConflict, -1},
		{"unsupported media type", errUnsupportedMediaType, http.StatusUnsupportedMediaType, -1},
		{"not ready", errNotReady, http.StatusServiceUnavailable, -1},
		{"canceled", context.Canceled, http.StatusServiceUnavailable, -1},
		{"deadline", fmt.Errorf("list: %w", context.DeadlineExceeded), http.StatusServiceUnavailable, -1},
		{"retired", fmt.Errorf("action x: %w", taskactions.ErrRetired), http.StatusConflict, -1},
		{"history down", fmt.Errorf("action x: %w: %w", taskactions.ErrHistory, errors.New("dial pg-host:5432")), http.StatusServiceUnavailable, -1},
		{"unknown", errors.New("etcd: secret-host:2379 refused"), http.StatusInternalServerError, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := problemFor(tt.err)
			if p.Status != tt.status {
				t.Fatalf("status = %d, want %d", p.Status, tt.status)
			}
			if p.Type != "about:blank" || p.Title != http.StatusText(tt.status) {
				t.Errorf("type, title = %q, %q; want about:blank, %q", p.Type, p.Title, http.StatusText(tt.status))
			}
			if p.Detail == nil || *p.Detail == "" {
				t.Error("detail is empty")
			}
			switch {
			case tt.wantErrors < 0 && p.Errors != nil:
				t.Errorf("errors = %+v, want none", *p.Errors)
			case tt.wantErrors >= 0 && (p.Errors == nil || len(*p.Errors) != tt.wantErrors):
				t.Errorf("errors = %v, want %d of them", p.Errors, tt.wantErrors)
			}
		})
	}
}

// A 500 must not leak internals (hosts, paths, stack) to the client.
func TestProblemForHidesInternalErrors(t *testing.T) {
	err := errors.New("dial tcp 10.0.0.7:2379: connection refused")
	p := problemFor(err)
	if p.Detail != nil && strings.Contains(*p.Detail, "10.0.0.7") {
		t.Errorf("detail %q contains the error text", *p.Detail)
	}
}

func TestWriteProblem(t *testing.T) {
	tests := []struct {
		name      string
		requestID string
		err       error
		status    int
		logged    bool // 5xx are logged with their cause
	}{
		{"with request id", "req-42", taskactions.ErrNotFound, http.StatusNotFound, false},
		{"without request id", "", errMethodNotAllowed, http.StatusMethodNotAllowed, false},
		{"server fault", "req-43", errors.New("boom: secret detail"), http.StatusInternalServerError, true},
		{"starting", "req-44", errNotReady, http.StatusServiceUnavailable, false},
		{"at the stream limit", "req-45", errTooManyStreams, http.StatusServiceUnavailable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logBuf bytes.Buffer
			ctx := zerolog.New(&logBuf).WithContext(context.Background())
			if tt.requestID != "" {
				ctx = context.WithValue(ctx, requestIDKey, tt.requestID)
			}
			r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/x", nil)
			w := httptest.NewRecorder()

			writeProblem(w, r, tt.err)

			if w.Code != tt.status {
				t.Errorf("status = %d, want %d", w.Code, tt.status)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var p Problem
			if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if p.Status != tt.status {
				t.Errorf("body status = %d, want %d", p.Status, tt.status)
			}
			switch {
			case tt.requestID == "" && p.Instance != nil:
				t.Errorf("instance = %q, want none", *p.Instance)
			case tt.requestID != "" && (p.Instance == nil || !strings.Contains(*p.Instance, tt.requestID)):
				t.Errorf("instance = %v, want it to name %q", p.Instance, tt.requestID)
			}
			if tt.logged != strings.Contains(logBuf.String(), tt.err.Error()) {
				t.Errorf("logged = %v, want %v; log: %s", !tt.logged, tt.logged, logBuf.String())
			}
			if strings.Contains(w.Body.String(), "secret detail") {
				t.Errorf("body leaks the error: %s", w.Body)
			}
		})
	}
}
