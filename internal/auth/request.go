package auth

import (
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
}

// Authenticate implements Authenticator.
func (a *RequestAuthenticator) Authenticate(r *http.Request) (*Subject, error) {
	if token, ok := bearer(r); ok {
		if strings.HasPrefix(token, taskTokenPrefix) {
			s, err := a.Signer.taskSubject(token)
			if err != nil {
				return nil, fmt.Errorf("%w: the task token is not valid", ErrUnauthenticated)
			}
			return s, nil
		}
		if s, ok := a.Tokens.Lookup(token); ok {
			return s, nil
		}
		if a.Cluster != nil {
			return a.Cluster.Review(r.Context(), token)
		}
		return nil, fmt.Errorf("%w: the bearer token is not valid", ErrUnauthenticated)
	}
	s, ok, err := a.Sessions.subject(r)
	switch {
	case err != nil:
		return nil, err
	case ok:
		return s, nil
	}
	return nil, fmt.Errorf("%w: send Authorization: Bearer <token>, or log in to the dashboard", ErrUnauthenticated)
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
