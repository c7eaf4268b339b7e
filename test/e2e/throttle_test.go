package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"taskactions/internal/app"
	"taskactions/internal/auth"
	"taskactions/pkg/client"
)

// Wrong logins and bad bearer tokens are limited per client address:
// past a burst of failures, the address is answered 429 problem+json with
// Retry-After, without its credential being checked (a right guess would
// show), logins and tokens alike. Requests that succeed never count, and
// a token that worked from the address before goes on working.
func TestFailedLoginsAreThrottled(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.yaml")
	if err := os.WriteFile(tokens, []byte(readerTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := startServer(filepath.Join(dir, "data"), func(c *app.Config) { c.AuthTokensFile = tokens })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx := context.Background()
	base := s.URL() + "/api/v1"
	as := func(token string) *client.ClientWithResponses {
		c, err := client.NewClientWithResponses(base, client.WithBearerToken(token))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	anonymous, err := client.NewClientWithResponses(base)
	if err != nil {
		t.Fatal(err)
	}
	login := func(token string) *client.CreateSessionResponse {
		t.Helper()
		r, err := anonymous.CreateSessionWithResponse(ctx, client.LoginRequest{Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	for range 3 * auth.DefaultFailureBurst {
		if r, err := s.api.GetSessionWithResponse(ctx); err != nil || r.StatusCode() != http.StatusOK {
			t.Fatalf("the admin: %v %d", err, r.StatusCode())
		}
	}
	for i := range auth.DefaultFailureBurst {
		if r := login(fmt.Sprintf("wrong-token-%010d", i)); r.StatusCode() != http.StatusUnauthorized {
			t.Fatalf("wrong login %d: HTTP %d %s, want 401", i, r.StatusCode(), r.Body)
		}
	}
	throttled := func(what string, code int, resp *http.Response, p *client.Problem) {
		t.Helper()
		wantProblem(t, what, code, resp, p, "429", "too many failed logins or bad tokens from this address", http.StatusTooManyRequests)
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || secs < 1 {
			t.Errorf("%s: Retry-After %q, want whole seconds", what, resp.Header.Get("Retry-After"))
		}
	}
	r := login("wrong-token-once-more")
	throttled("one wrong login more", r.StatusCode(), r.HTTPResponse, r.ApplicationproblemJSONDefault)
	bad, err := as("bad-token-0123456789").GetSessionWithResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	throttled("a bad bearer token", bad.StatusCode(), bad.HTTPResponse, bad.ApplicationproblemJSONDefault)
	// A right token not seen from here before is not checked either.
	fresh, err := as("reader-token-0123456789").GetSessionWithResponse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	throttled("a token not used from this address before", fresh.StatusCode(), fresh.HTTPResponse, fresh.ApplicationproblemJSONDefault)
	// The admin, who succeeded from here before, goes on.
	if r, err := s.api.GetSessionWithResponse(ctx); err != nil || r.StatusCode() != http.StatusOK {
		t.Errorf("the admin during the throttle: %v %d %s", err, r.StatusCode(), r.Body)
	}
	if r := login(s.token); r.StatusCode() != http.StatusOK {
		t.Errorf("the admin's login during the throttle: HTTP %d %s", r.StatusCode(), r.Body)
	}
}
