package handlers

import (
	"context"
	"net/http"

	"github.com/go-chi/render"
)

// The responses this package writes by hand (health, readiness, problems)
// go through go-chi/render; the operations' own are the generated
// Visit…Response methods'.

// respondJSON writes v as JSON with the status.
func respondJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	r = r.WithContext(r.Context()) // render.Status replaces *r: not the caller's
	render.Status(r, status)
	render.JSON(w, r, v)
}

// respondProblem writes a problem as render writes JSON, under the media
// type RFC 9457 gives problems (render names every JSON body
// application/json). Only the context is needed: a stream's problem has
// no request at hand.
func respondProblem(ctx context.Context, w http.ResponseWriter, p Problem) {
	w.Header().Set("Cache-Control", "no-store")
	r := (&http.Request{}).WithContext(ctx)
	render.Status(r, p.Status)
	render.JSON(problemMedia{w}, r, p)
}

// problemMedia sets the problem media type as the header is written,
// after render set its own.
type problemMedia struct{ http.ResponseWriter }

func (m problemMedia) WriteHeader(code int) {
	m.Header().Set("Content-Type", "application/problem+json")
	m.ResponseWriter.WriteHeader(code)
}
