package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
)

type ctxKey int

const requestIDKey ctxKey = 0

// requestID returns the id of the request in ctx.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// withRequestID takes the caller's X-Request-ID when it is short and
// printable, or makes one; it is echoed in the response and in every log
// line of the request (through the logger it puts in the context).
func withRequestID(log zerolog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, withID(&log, w, r))
		})
	}
}

// withID is r with its request id (the client's if printable, else a new
// one) and a logger that names it. The middlewares' work is done in
// functions that return, so that their frames stay small: they are on the
// stack as long as the request is served (hours, for a log's tail, which
// does not park; see sse.Parking), and their depth sets how far a stream's
// stack grows before it parks.
//
//go:noinline
func withID(log *zerolog.Logger, w http.ResponseWriter, r *http.Request) *http.Request {
	id := r.Header.Get("X-Request-ID")
	if !printable(id, 64) {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		id = hex.EncodeToString(b)
	}
	w.Header().Set("X-Request-ID", id)
	ctx := context.WithValue(r.Context(), requestIDKey, id)
	l := log.With().Str("requestId", id)
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		// The request's trace (tracing on): its log lines and its spans
		// find each other.
		l = l.Str("traceId", sc.TraceID().String())
	}
	return r.WithContext(l.Logger().WithContext(ctx))
}

func printable(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, c := range []byte(s) {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// recoverPanics turns a panic in a handler into a logged 500 problem. No
// stack or message reaches the client.
func recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v) // the server's own way to abort a response
			}
			zerolog.Ctx(r.Context()).Error().Str("panic", fmt.Sprint(v)).Bytes("stack", debug.Stack()).Msg("handler panicked")
			writeProblem(w, r, fmt.Errorf("panic: %v", v))
		}()
		next.ServeHTTP(w, r)
	})
}

// accessLog logs one line per request, after it ends. The route template
// (not the path) keys the metrics; the path is in the log.
func accessLog(m *Metrics) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			logRequest(m, r, ww, start)
		})
	}
}

// logRequest logs and counts a request that ended (a function of its own
// for the frame's sake; see withID).
//
//go:noinline
func logRequest(m *Metrics, r *http.Request, ww middleware.WrapResponseWriter, start time.Time) {
	elapsed := time.Since(start)
	status := ww.Status()
	if status == 0 {
		status = http.StatusOK
	}
	route := "unmatched"
	if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
		route = rc.RoutePattern()
	}
	m.observe(route, r.Method, status, elapsed)
	log := zerolog.Ctx(r.Context())
	log.WithLevel(accessLevel(r.Method, route, status)).Str("method", r.Method).Str("path", r.URL.Path).Str("route", route).Int("status", status).
		Int("bytes", ww.BytesWritten()).Dur("durationMs", elapsed).Str("remote", r.RemoteAddr).Msg("request")
}

// accessLevel is the level of a request's access-log line. A user watching
// the log wants what changed and what went wrong: writes and refusals at
// info, failures at warn. Successful reads (the dashboard's files, lists,
// streams, probes) are the bulk of the traffic, and at info they scrolled
// the login link away (6,086 lines for one walk through the quick start),
// so they are at debug.
func accessLevel(method, route string, status int) zerolog.Level {
	switch {
	case status >= 500:
		return zerolog.WarnLevel
	case status >= 400:
		return zerolog.InfoLevel
	case route == "/healthz" || route == "/readyz" || route == "/metrics":
		return zerolog.DebugLevel
	case method == http.MethodGet || method == http.MethodHead:
		return zerolog.DebugLevel
	}
	return zerolog.InfoLevel
}
