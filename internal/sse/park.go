package sse

import (
	"context"
	"net/http"
)

// A stream that cannot leave net/http (HTTP/2, whose streams cannot be
// hijacked; HTTP/1.0) parks instead: once synced, its handler returns
// through every middleware and router, and the stream goes on at the top
// of the request's goroutine (Parking), on the same response, which
// net/http keeps until Parking returns. The way down to the handler grows
// the goroutine's stack to 16 KiB; parked a few frames under net/http, the
// stream uses so little of it that collections halve it twice, to 4 KiB,
// and the request copies and response wrappers of the middlewares are let
// go.
//
// What changes for a parked stream is what changes for a detached one:
// the access log records the request when the stream is synced, and a
// second line ("event stream ended", with the same requestId) its end.

type parkKey struct{}

// parking is where a stream leaves the rest of itself for Parking to run.
type parking struct{ stream follower }

// Parking lets the streams served under it park. It must be the server's
// outermost handler: what lies between it and net/http stays under every
// parked stream.
func Parking(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		p := new(parking)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), parkKey{}, p)))
		if p.stream != nil {
			follow(p.stream)
		}
	})
}

// park leaves the rest of the stream to Parking, and reports whether it
// could (the request did not come through Parking, or another stream of
// the same request parked first).
func (s *stream[V]) park() bool {
	p, ok := s.ctx.Value(parkKey{}).(*parking)
	if !ok || p.stream != nil {
		return false
	}
	s.how = "parked"
	p.stream = s
	return true
}
