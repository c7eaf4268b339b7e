package auth

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// RequestAuthenticator reads a request's credential: a bearer token
// (static, or a task token the server signed), else a session cookie.
type RequestAuthenticator struct {
	Tokens   *Tokens
	Sessions *Sessions
	Signer   *Signer
	// Cluster, when set (--auth=kubernetes), reviews the bearer tokens this
	// server does not know itself.
	Cluster *Cluster
	// Attempts says whether a task token's attempt is still going on; a
	// task token is refused without it.
	Attempts Attempts
	// Throttle limits the failed checks per client address (nil: none).
	Throttle *Throttle
}

// Authenticate implements Authenticator. A request without a credential
// is refused without counting against its address: only a credential
// that is wrong does.
func (a *RequestAuthenticator) Authenticate(r *http.Request) (s *Subject, err error) {
	if token, ok := bearer(r); ok {
		err = a.Throttle.Check(r.RemoteAddr, token, func() error {
			s, err = a.bearerSubject(r.Context(), token)
			return err
		})
		return s, err
	}
	if c, cerr := a.Sessions.requestCookie(r); cerr == nil && c.Value != "" {
		err = a.Throttle.Check(r.RemoteAddr, c.Value, func() error {
			s, _, err = a.Sessions.subject(r)
			return err
		})
		return s, err
	}
	return nil, fmt.Errorf("%w: send Authorization: Bearer <token>, or log in to the dashboard", ErrUnauthenticated)
}

func (a *RequestAuthenticator) bearerSubject(ctx context.Context, token string) (*Subject, error) {
	if strings.HasPrefix(token, taskTokenPrefix) {
		s, err := a.Signer.taskSubject(token)
		if err != nil {
			return nil, fmt.Errorf("%w: the task token is not valid", ErrUnauthenticated)
		}
		if a.Attempts == nil {
			return nil, fmt.Errorf("%w: task tokens are not accepted yet", ErrUnavailable)
		}
		if err := a.Attempts.Current(ctx, *s.Task); err != nil {
			return nil, err
		}
		return s, nil
	}
	if s, ok := a.Tokens.Lookup(token); ok {
		return s, nil
	}
	if a.Cluster != nil {
		return a.Cluster.Review(ctx, token)
	}
	return nil, fmt.Errorf("%w: the bearer token is not valid", ErrUnauthenticated)
}

// HasBearerToken reports whether r carries a bearer token, which then is
// its only credential: Authenticate never reads its cookie.
func HasBearerToken(r *http.Request) bool {
	_, ok := bearer(r)
	return ok
}

// bearer returns the token of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Open authenticates every request as Anonymous: --auth=none.
type Open struct{}

// Authenticate implements Authenticator.
func (Open) Authenticate(*http.Request) (*Subject, error) { return Anonymous(), nil }
