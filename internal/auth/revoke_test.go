package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"taskactions/internal/history"
)

// A logout ends the session for good: on the replica that served it at
// once, on another sharing the store once it reads it, and after a
// restart; a copy of the cookie no longer works anywhere.
func TestLogoutEndsTheSessionEverywhere(t *testing.T) {
	ctx := context.Background()
	store, err := history.Open(ctx, filepath.Join(t.TempDir(), "history.db"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	now := time.Now()
	signer := newSigner(t, &now)
	tokens, _ := NewTokens(nil, map[string]*Subject{"token-of-bob-0123456": {Name: "bob"}})
	replica := func() *Sessions {
		s := NewSessions(signer, tokens, "c", false)
		if s.Revocations, err = NewRevocations(ctx, store); err != nil {
			t.Fatal(err)
		}
		return s
	}
	one, two := replica(), replica()
	cookie, _, err := one.Open("token-of-bob-0123456")
	if err != nil {
		t.Fatal(err)
	}
	with := func(c *http.Cookie) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(c)
		return r
	}
	works := func(s *Sessions) bool {
		sub, _, err := s.subject(with(cookie))
		if err != nil && !errors.Is(err, ErrUnauthenticated) {
			t.Fatal(err)
		}
		return err == nil && sub.Name == "bob"
	}
	if !works(one) || !works(two) {
		t.Fatal("a fresh session is refused")
	}
	if _, err := one.Close(ctx, with(cookie)); err != nil {
		t.Fatal(err)
	}
	if works(one) {
		t.Error("the session works on the replica that closed it")
	}
	if err := two.Revocations.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if works(two) {
		t.Error("the session works on another replica after it read the store")
	}
	if works(replica()) {
		t.Error("the session works after a restart")
	}
	other, _, _ := one.Open("token-of-bob-0123456")
	if sub, _, err := one.subject(with(other)); err != nil || sub.Name != "bob" {
		t.Errorf("a new session after the logout: %v", err)
	}
}
