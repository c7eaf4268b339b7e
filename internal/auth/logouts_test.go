package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"taskactions/internal/history"
)

// A logout ends its session for good: on the replica that served it at
// once, on another sharing the store once it reads it, and after a
// restart; a copy of the cookie no longer works anywhere, while the
// token's other sessions (another browser) do. A cookie from before
// sessions had ids ends every session its token opened until then.
func TestLogoutEndsTheSessionEverywhere(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	signer := newSigner(t, &now)
	replica, _ := replicas(t, signer, map[string]*Subject{"token-of-bob-0123456": {Name: "bob"}, "token-of-eve-0123456": {Name: "eve"}})
	one, two := replica(), replica()
	open := func(token string) *http.Cookie {
		c, _, err := one.Open(t.Context(), token)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	bob, otherBrowser, eve := open("token-of-bob-0123456"), open("token-of-bob-0123456"), open("token-of-eve-0123456")
	works := func(s *Sessions, c *http.Cookie) bool {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(c)
		_, _, err := s.subject(r)
		if err != nil && !errors.Is(err, ErrUnauthenticated) {
			t.Fatal(err)
		}
		return err == nil
	}
	logout := func(c *http.Cookie) {
		r := httptest.NewRequest(http.MethodDelete, "/", nil)
		r.AddCookie(c)
		if _, err := one.Close(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if !works(one, bob) || !works(two, bob) {
		t.Fatal("a fresh session is refused")
	}
	now = now.Add(time.Second)
	logout(bob)
	if works(one, bob) {
		t.Error("the session works on the replica that logged out")
	}
	if !works(two, bob) {
		t.Fatal("the other replica refused the session before reading the store: the test proves nothing there")
	}
	if err := two.logouts.Load().Load(ctx); err != nil {
		t.Fatal(err)
	}
	if works(two, bob) {
		t.Error("the session works on another replica after it read the store")
	}
	if works(replica(), bob) {
		t.Error("the session works after a restart")
	}
	if !works(one, otherBrowser) || !works(one, eve) {
		t.Error("the logout ended other sessions")
	}

	// A cookie without an id, as issued before they had one.
	h := sha256.Sum256([]byte("token-of-bob-0123456"))
	legacy := &http.Cookie{Name: "c", Value: signer.sign(claims{Kind: kindSession, Sub: hex.EncodeToString(h[:]), Exp: now.Add(time.Hour).Unix()})}
	if !works(one, legacy) {
		t.Fatal("a cookie without an id is refused before any logout")
	}
	now = now.Add(time.Second)
	logout(legacy)
	if works(one, legacy) || works(one, otherBrowser) || !works(one, eve) {
		t.Errorf("a logout with a cookie without an id: it works %v, bob's other session works %v, eve's %v; want false, false, true",
			works(one, legacy), works(one, otherBrowser), works(one, eve))
	}
	now = now.Add(time.Second)
	if !works(one, open("token-of-bob-0123456")) {
		t.Error("a session opened after the logout is refused")
	}
}

// A logout ends the long requests (streams) its session holds open: on the
// replica that served it at once, on another when it reads the store.
// Other sessions' and tokens' requests go on, and a released request
// leaves nothing behind.
func TestLogoutEndsHeldRequests(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	replica, tokens := replicas(t, newSigner(t, &now), map[string]*Subject{"token-of-bob-0123456": {Name: "bob"}})
	var err error
	one, two := replica(), replica()
	bob, _, _ := one.Open(t.Context(), "token-of-bob-0123456")
	other, _, _ := one.Open(t.Context(), "token-of-bob-0123456")
	hold := func(s *Sessions, c *http.Cookie) (context.Context, func()) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		var sub *Subject
		if c != nil {
			r.AddCookie(c)
			if sub, _, err = s.subject(r); err != nil {
				t.Fatal(err)
			}
		} else {
			sub, _ = tokens.Lookup("token-of-bob-0123456")
		}
		return s.Hold(WithSubject(ctx, sub))
	}
	onOne, _ := hold(one, bob)
	onTwo, _ := hold(two, bob)
	otherSession, _ := hold(one, other)
	token, _ := hold(one, nil)
	released, release := hold(one, bob)
	release()
	if released.Err() == nil {
		t.Error("a released hold is not over")
	}

	r := httptest.NewRequest(http.MethodDelete, "/", nil)
	r.AddCookie(bob)
	if _, err := one.Close(ctx, r); err != nil {
		t.Fatal(err)
	}
	if onOne.Err() == nil {
		t.Error("the logout left its session's request open on the replica that served it")
	}
	if onTwo.Err() != nil {
		t.Fatal("the other replica ended the request before reading the store: the test proves nothing there")
	}
	if err := two.logouts.Load().Load(ctx); err != nil {
		t.Fatal(err)
	}
	if onTwo.Err() == nil {
		t.Error("the other replica left the request open after reading the store")
	}
	if otherSession.Err() != nil || token.Err() != nil {
		t.Errorf("the logout ended other requests: another session's %v, a token's %v", otherSession.Err(), token.Err())
	}
	if n := len(one.logouts.Load().held); n != 1 {
		t.Errorf("replica one holds %d requests, want 1 (the other session's)", n)
	}
}

// replicas returns a maker of replicas' sessions of the subjects' tokens,
// sharing one history store as the replicas of one server do.
func replicas(t *testing.T, signer *Signer, subjects map[string]*Subject) (replica func() *Sessions, tokens *Tokens) {
	t.Helper()
	store, err := history.Open(context.Background(), filepath.Join(t.TempDir(), "history.db"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tokens, _ = NewTokens(nil, subjects)
	return func() *Sessions {
		s := NewSessions(signer, tokens, "c", false)
		l, err := NewLogouts(context.Background(), store)
		if err != nil {
			t.Fatal(err)
		}
		s.SetLogouts(l)
		return s
	}, tokens
}
