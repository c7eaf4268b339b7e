package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/rs/zerolog"

	"taskactions/internal/auth"
)

// GetSession says who the request's credential is and what it may do.
func (s *Server) GetSession(ctx context.Context, _ GetSessionRequestObject) (GetSessionResponseObject, error) {
	return GetSession200JSONResponse(sessionOf(auth.SubjectFrom(ctx))), nil
}

// CreateSession logs a browser in: it checks the token and sets the
// session cookie. With authentication off there is nothing to open.
// A wrong token counts against the client's address (auth.Throttle).
func (s *Server) CreateSession(ctx context.Context, req CreateSessionRequestObject) (CreateSessionResponseObject, error) {
	if s.sessions == nil {
		return CreateSession200JSONResponse{Body: sessionOf(auth.Anonymous())}, nil
	}
	var cookie *http.Cookie
	var sub *auth.Subject
	err := s.throttle.Check(remoteAddr(ctx), req.Body.Token, func() (err error) {
		cookie, sub, err = s.sessions.Open(ctx, req.Body.Token)
		return err
	})
	if err != nil {
		return nil, err
	}
	c := cookie.String()
	return CreateSession200JSONResponse{Body: sessionOf(sub), Headers: CreateSession200ResponseHeaders{SetCookie: &c}}, nil
}

// DeleteSession logs a browser out: the session ends for good, so a copy
// of its cookie no longer works either.
func (s *Server) DeleteSession(ctx context.Context, _ DeleteSessionRequestObject) (DeleteSessionResponseObject, error) {
	if s.sessions == nil {
		return DeleteSession204Response{}, nil
	}
	cookie, err := s.sessions.Close(ctx, requestFrom(ctx))
	if err != nil {
		// The cause (a database address, perhaps) is for the log only.
		zerolog.Ctx(ctx).Error().Err(err).Msg("logout: the sessions could not be ended")
		return nil, fmt.Errorf("%w: the logout could not be recorded; try again", auth.ErrUnavailable)
	}
	c := cookie.String()
	return DeleteSession204Response{Headers: DeleteSession204ResponseHeaders{SetCookie: &c}}, nil
}

func sessionOf(sub *auth.Subject) Session {
	out := Session{Subject: sub.Name, Grants: make([]Grant, len(sub.Grants))}
	for i, g := range sub.Grants {
		verbs := make([]Verb, len(g.Verbs))
		for j, v := range g.Verbs {
			verbs[j] = Verb(v)
		}
		out.Grants[i] = Grant{Project: g.Project, Domain: g.Domain, Verbs: verbs}
	}
	return out
}

// login serves the one-time link the server prints at start
// (/login?code=...): a good code sets the session cookie, and either way
// the browser goes on to the dashboard, which asks for a token if there is
// still no session. A wrong code counts against the client's address, and
// a throttled address is 429.
func login(codes *auth.LoginCodes, throttle *auth.Throttle) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		if codes == nil {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		code := r.URL.Query().Get("code")
		err := auth.ErrUnauthenticated // no code: nothing to check, nothing counted
		if code != "" {
			err = throttle.Check(r.RemoteAddr, code, func() error {
				cookie, ok := codes.Redeem(code)
				if !ok {
					return fmt.Errorf("%w: the login link is used or expired", auth.ErrUnauthenticated)
				}
				http.SetCookie(w, cookie)
				return nil
			})
		}
		switch {
		case err == nil:
			http.Redirect(w, r, "/", http.StatusSeeOther)
		case errors.Is(err, auth.ErrThrottled):
			writeProblem(w, r, err)
		default:
			http.Redirect(w, r, "/?login=expired", http.StatusSeeOther)
		}
	}
}

// remoteAddr is the address the request came from, for the throttle.
func remoteAddr(ctx context.Context) string {
	if r := requestFrom(ctx); r != nil {
		return r.RemoteAddr
	}
	return ""
}

// holdSession ties a stream to the session it was opened with, so that a
// logout ends it (auth.Sessions.Hold); release when the stream is over.
func (s *Server) holdSession(ctx context.Context) (ended context.Context, release func()) {
	if s.sessions == nil {
		return context.Background(), func() {}
	}
	return s.sessions.Hold(ctx)
}
