package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Sessions are what a browser holds instead of a token: an HttpOnly,
// SameSite=Strict cookie, signed by the server, naming the token it was
// opened with. Pages and a plain EventSource send it by themselves; no
// script can read it and no other site's page makes the browser send it.
// A token never travels in a URL.
type Sessions struct {
	signer *Signer
	tokens *Tokens
	// Name is the cookie's name. Cookies do not tell ports apart, so it
	// carries the server's port: two servers on one host keep their own.
	// A cookie named CookieName, as the API document names it, is taken
	// too.
	Name string
	// Secure marks the cookie HTTPS-only (when the server serves TLS).
	Secure bool
	TTL    time.Duration
	// logouts are the sessions logouts ended; until they are set (while
	// the server starts) a logout only clears the cookie in the browser.
	logouts atomic.Pointer[Logouts]
	// Cluster, when set (--auth=kubernetes), opens sessions for the
	// tokens the cluster accepts, too.
	Cluster *Cluster
}

// ClusterIdentity is who the cluster said a token is: a session opened
// with it acts as that user and groups, authorized by the cluster
// (SubjectAccessReview) at each request.
type ClusterIdentity struct {
	User   string   `json:"u"`
	Groups []string `json:"g,omitempty"`
}

// ClusterSessionTTL bounds a session opened with a cluster's token: the
// server keeps no copy of the token, so it cannot learn that the cluster
// revoked it; the cluster's RBAC still decides every request.
const ClusterSessionTTL = time.Hour

// SetLogouts makes logouts end sessions for good. A session checked
// before (a stream held while the server starts) is checked again when
// the API serves it.
func (s *Sessions) SetLogouts(l *Logouts) { s.logouts.Store(l) }

// CookieName is the session cookie's name in the API document, which can
// name no port: the server sets CookieName-<port> (Sessions.Name) and
// takes either.
const CookieName = "taskactions-session"

// requestCookie is r's session cookie: the one of this server's port, else
// one named as the document names it.
func (s *Sessions) requestCookie(r *http.Request) (*http.Cookie, error) {
	if c, err := r.Cookie(s.Name); err == nil {
		return c, nil
	}
	return r.Cookie(CookieName)
}

// DefaultSessionTTL is how long a session lasts.
const DefaultSessionTTL = 7 * 24 * time.Hour

// NewSessions returns the sessions of tokens, signed by signer.
func NewSessions(signer *Signer, tokens *Tokens, name string, secure bool) *Sessions {
	return &Sessions{signer: signer, tokens: tokens, Name: name, Secure: secure, TTL: DefaultSessionTTL}
}

// Open checks a token and returns the cookie of a new session for it:
// one of this server's tokens, or, with a Cluster, one the cluster
// accepts (a TokenReview), whose session acts as the identity the cluster
// gave it.
func (s *Sessions) Open(ctx context.Context, token string) (*http.Cookie, *Subject, error) {
	h := sha256.Sum256([]byte(token))
	if sub, ok := s.tokens.byHashed(h); ok {
		return s.cookie(h, nil, s.TTL), sub, nil
	}
	if s.Cluster == nil {
		return nil, nil, fmt.Errorf("%w: the token is not valid", ErrUnauthenticated)
	}
	sub, err := s.Cluster.Review(ctx, token)
	if err != nil {
		return nil, nil, err
	}
	id := &ClusterIdentity{User: sub.Name, Groups: sub.Groups}
	return s.cookie(h, id, min(s.TTL, ClusterSessionTTL)), sub, nil
}

func (s *Sessions) cookie(h [32]byte, cluster *ClusterIdentity, ttl time.Duration) *http.Cookie {
	now := s.signer.now()
	v := s.signer.sign(claims{Kind: kindSession, ID: rand.Text(), Sub: hex.EncodeToString(h[:]), Opened: now.UnixNano(), Exp: now.Add(ttl).Unix(), Cluster: cluster})
	return &http.Cookie{
		Name: s.Name, Value: v, Path: "/", MaxAge: int(ttl.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.Secure,
	}
}

// Close logs the request's session out: where logouts are kept it ends
// for good, so that a copy of the cookie no longer works either. It
// returns the cookie that ends the session in the browser.
func (s *Sessions) Close(ctx context.Context, r *http.Request) (*http.Cookie, error) {
	l := s.logouts.Load()
	c, err := s.requestCookie(r)
	if err != nil || l == nil {
		return s.Closed(), nil
	}
	if cl, err := s.signer.verify(c.Value, kindSession); err == nil {
		if err := l.End(ctx, cl, s.signer.now()); err != nil {
			return nil, fmt.Errorf("end the sessions: %w: %w", ErrUnavailable, err)
		}
	}
	return s.Closed(), nil
}

// Closed is the cookie that ends a session in the browser.
func (s *Sessions) Closed() *http.Cookie {
	return &http.Cookie{Name: s.Name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.Secure}
}

// subject returns the subject of the request's session cookie; ok is false
// when it has none.
func (s *Sessions) subject(r *http.Request) (sub *Subject, ok bool, err error) {
	c, err := s.requestCookie(r)
	if err != nil || c.Value == "" {
		return nil, false, nil
	}
	cl, err := s.signer.verify(c.Value, kindSession)
	if err != nil {
		return nil, true, fmt.Errorf("%w: the session is not valid; log in again", ErrUnauthenticated)
	}
	if l := s.logouts.Load(); l != nil && l.over(cl) {
		return nil, true, fmt.Errorf("%w: the session ended with a logout; log in again", ErrUnauthenticated)
	}
	if cl.Cluster != nil {
		if s.Cluster == nil {
			return nil, true, fmt.Errorf("%w: the session was opened with a cluster's token, which this server no longer takes; log in again", ErrUnauthenticated)
		}
		return &Subject{Name: cl.Cluster.User, Groups: cl.Cluster.Groups, Cluster: true, session: &cl}, true, nil
	}
	var h [32]byte
	if b, err := hex.DecodeString(cl.Sub); err == nil && len(b) == len(h) {
		copy(h[:], b)
	}
	sub, found := s.tokens.byHashed(h)
	if !found {
		return nil, true, fmt.Errorf("%w: the session's token is no longer valid; log in again", ErrUnauthenticated)
	}
	withSession := *sub
	withSession.session = &cl
	return &withSession, true, nil
}

// Hold ties a long request (an event stream, a log tail) to the session
// it came with: ended is done once a logout ends that session, at once on
// this replica and on another within its next read of the logouts. A
// request made with a token is never ended this way. release must be
// called when the request is over.
func (s *Sessions) Hold(ctx context.Context) (ended context.Context, release func()) {
	sub := SubjectFrom(ctx)
	l := s.logouts.Load()
	if sub == nil || sub.session == nil || l == nil {
		return context.Background(), func() {}
	}
	return l.hold(*sub.session)
}

// LoginCodes are one-time codes for the login link the server prints at
// start (the way Jupyter does): opening it once sets a session cookie for
// the admin token. A code is no token: it works once, and not after TTL.
type LoginCodes struct {
	sessions *Sessions
	token    [32]byte // the hash of the token a code opens a session for
	ttl      time.Duration

	mu    sync.Mutex
	codes map[string]time.Time // code -> expiry
}

// maxLoginCodes bounds the codes outstanding at once.
const maxLoginCodes = 16

// NewLoginCodes returns codes that open sessions for token.
func NewLoginCodes(sessions *Sessions, token string, ttl time.Duration) *LoginCodes {
	return &LoginCodes{sessions: sessions, token: sha256.Sum256([]byte(token)), ttl: ttl, codes: map[string]time.Time{}}
}

// Issue returns a new code.
func (l *LoginCodes) Issue() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	code := hex.EncodeToString(b)
	now := l.sessions.signer.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c, exp := range l.codes {
		if now.After(exp) || len(l.codes) >= maxLoginCodes {
			delete(l.codes, c)
		}
	}
	l.codes[code] = now.Add(l.ttl)
	return code
}

// Redeem uses up a code and returns the session cookie it opens.
func (l *LoginCodes) Redeem(code string) (*http.Cookie, bool) {
	l.mu.Lock()
	exp, ok := l.codes[code]
	delete(l.codes, code)
	l.mu.Unlock()
	if !ok || l.sessions.signer.now().After(exp) {
		return nil, false
	}
	return l.sessions.cookie(l.token, nil, l.sessions.TTL), true
}
