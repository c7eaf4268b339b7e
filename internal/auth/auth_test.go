package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGrantAuthorizer(t *testing.T) {
	alice := &Subject{Name: "alice", Grants: []Grant{
		{Project: "p1", Domain: Any, Verbs: []Verb{VerbRead, VerbWrite}},
		{Project: Any, Domain: "dev", Verbs: []Verb{VerbAbort}},
	}}
	for _, tc := range []struct {
		a    Attributes
		want bool
	}{
		{Attributes{Verb: VerbRead, Project: "p1", Domain: "prod"}, true},
		{Attributes{Verb: VerbWrite, Project: "p1", Domain: "dev"}, true},
		{Attributes{Verb: VerbExecute, Project: "p1", Domain: "dev"}, false},
		{Attributes{Verb: VerbRead, Project: "p2", Domain: "prod"}, false},
		{Attributes{Verb: VerbAbort, Project: "p2", Domain: "dev"}, true},
		{Attributes{Verb: VerbAbort, Project: "p2", Domain: "prod"}, false},
		// Names are compared whole: no prefix or join matches.
		{Attributes{Verb: VerbRead, Project: "p1-x", Domain: "prod"}, false},
	} {
		err := GrantAuthorizer{}.Authorize(context.Background(), alice, tc.a)
		if got := err == nil; got != tc.want {
			t.Errorf("%+v: allowed %v, want %v (%v)", tc.a, got, tc.want, err)
		}
		var d *Denied
		if err != nil && (!errors.As(err, &d) || !errors.Is(err, ErrForbidden)) {
			t.Errorf("%+v: refusal %v is not a *Denied wrapping ErrForbidden", tc.a, err)
		}
	}
	err := GrantAuthorizer{}.Authorize(context.Background(), alice, Attributes{Verb: VerbExecute, Project: "p1", Domain: "dev"})
	if msg := err.Error(); !strings.Contains(msg, "alice") || !strings.Contains(msg, "execute") || !strings.Contains(msg, `"p1"`) || !strings.Contains(msg, `"dev"`) {
		t.Errorf("refusal should name subject, verb, project and domain: %q", msg)
	}
	if err := (GrantAuthorizer{}).Authorize(context.Background(), Admin(), Attributes{Verb: VerbExecute, Project: "any", Domain: "where"}); err != nil {
		t.Errorf("admin refused: %v", err)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadTokenFile(t *testing.T) {
	sum := sha256.Sum256([]byte("0123456789abcdef-ci"))
	good := `
subjects:
  - name: alice
    token: 0123456789abcdef-alice
    grants: [{project: p1, domain: "*", verbs: [read, write]}]
  - name: ci
    tokenSha256: ` + hex.EncodeToString(sum[:]) + `
    grants: [{project: "*", domain: "*", verbs: ["*"]}]
`
	f, err := LoadTokenFile(writeFile(t, good))
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := NewTokens(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := tokens.Lookup("0123456789abcdef-alice"); !ok || s.Name != "alice" {
		t.Errorf("alice's token: %v %v", s, ok)
	}
	if s, ok := tokens.Lookup("0123456789abcdef-ci"); !ok || s.Name != "ci" {
		t.Errorf("ci's hashed token: %v %v", s, ok)
	}
	if _, ok := tokens.Lookup("0123456789abcdef-nobody"); ok {
		t.Error("an unknown token was accepted")
	}

	for name, bad := range map[string]string{
		"unknown field":   "subjects: [{name: a, token: 0123456789abcdef-a, grant: []}]",
		"no token":        "subjects: [{name: a, grants: []}]",
		"both tokens":     "subjects: [{name: a, token: 0123456789abcdef-a, tokenSha256: " + hex.EncodeToString(sum[:]) + "}]",
		"short token":     "subjects: [{name: a, token: short}]",
		"bad hash":        "subjects: [{name: a, tokenSha256: abc}]",
		"unknown verb":    "subjects: [{name: a, token: 0123456789abcdef-a, grants: [{project: p, domain: d, verbs: [delete]}]}]",
		"bad project":     "subjects: [{name: a, token: 0123456789abcdef-a, grants: [{project: P_1, domain: d, verbs: [read]}]}]",
		"no verbs":        "subjects: [{name: a, token: 0123456789abcdef-a, grants: [{project: p, domain: d}]}]",
		"duplicate name":  "subjects: [{name: a, token: 0123456789abcdef-a}, {name: a, token: 0123456789abcdef-b}]",
		"not yaml at all": "{{{",
	} {
		if _, err := LoadTokenFile(writeFile(t, bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	dup := "subjects: [{name: a, token: 0123456789abcdef-a}, {name: b, token: 0123456789abcdef-a}]"
	f, err = LoadTokenFile(writeFile(t, dup))
	if err == nil {
		_, err = NewTokens(f, nil)
	}
	if err == nil {
		t.Error("two subjects with one token accepted")
	}
}

func newSigner(t *testing.T, now *time.Time) *Signer {
	t.Helper()
	s, err := NewSigner([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return *now }
	return s
}

// It reads better whole: one scenario, its steps in the order a user takes them.
func TestSessionsAndTaskTokens(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	signer := newSigner(t, &now)
	tokens, err := NewTokens(nil, map[string]*Subject{"admin-token-0123456789": Admin()})
	if err != nil {
		t.Fatal(err)
	}
	sessions := NewSessions(signer, tokens, "taskactions-8080", false)
	// The attempt of the task token below is current until over is set.
	var over error
	attempts := AttemptsFunc(func(_ context.Context, ts TaskScope) error {
		if ts.UID != "uid-1" || ts.Attempt != 2 {
			t.Errorf("the authenticator asked about %+v", ts)
		}
		return over
	})
	a := &RequestAuthenticator{Tokens: tokens, Sessions: sessions, Signer: signer, Attempts: attempts}
	withCookie := func(c *http.Cookie) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(c)
		return r
	}
	withBearer := func(token string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}

	if _, _, err := sessions.Open(t.Context(), "wrong"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("session for a wrong token: %v", err)
	}
	cookie, _, err := sessions.Open(t.Context(), "admin-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/", cookie)
	}
	if strings.Contains(cookie.Value, "admin-token") {
		t.Error("the cookie carries the token")
	}
	if s, err := a.Authenticate(withCookie(cookie)); err != nil || s.Name != "admin" {
		t.Errorf("session: %v %v", s, err)
	}

	tampered := *cookie
	tampered.Value = cookie.Value[:len(cookie.Value)-2] + "xx"
	task := signer.TaskToken(TaskScope{Project: "p", Domain: "d", Run: "r", Action: "a", UID: "uid-1", Attempt: 2}, time.Hour)
	old := taskTokenPrefix + signer.sign(claims{Kind: kindTask, Sub: "task:p/d/r/a", Grants: []Grant{{Project: "p", Domain: "d", Verbs: []Verb{Any}}}, Exp: now.Add(time.Hour).Unix()})
	taskAsCookie := *cookie
	taskAsCookie.Value = strings.TrimPrefix(task, taskTokenPrefix)
	for name, r := range map[string]*http.Request{
		"nothing":              httptest.NewRequest(http.MethodGet, "/", nil),
		"tampered cookie":      withCookie(&tampered),
		"task token as cookie": withCookie(&taskAsCookie),
		"wrong bearer":         withBearer("admin-token-0123456780"),
		"session as bearer":    withBearer(taskTokenPrefix + cookie.Value),
		"task token of before": withBearer(old),
		"basic auth": func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.SetBasicAuth("admin", "x")
			return r
		}(),
	} {
		if s, err := a.Authenticate(r); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: got %v %v, want ErrUnauthenticated", name, s, err)
		}
	}

	s, err := a.Authenticate(withBearer(task))
	if err != nil || s.Name != "task:p/d/r/a#2" || s.Task == nil || s.Task.Run != "r" {
		t.Fatalf("task token: %+v %v", s, err)
	}
	// Read and write in its project and domain, and no execute: its
	// action was not enqueued by a subject that could.
	if len(s.Grants) != 1 || s.Grants[0].Project != "p" || s.Grants[0].Domain != "d" || fmt.Sprint(s.Grants[0].Verbs) != "[read write]" {
		t.Errorf("task token grants %+v, want read and write in p/d", s.Grants)
	}
	exec := signer.TaskToken(TaskScope{Project: "p", Domain: "d", Run: "r", Action: "a", UID: "uid-1", Attempt: 2, MayExecute: true}, time.Hour)
	if s, err := a.Authenticate(withBearer(exec)); err != nil || fmt.Sprint(s.Grants[0].Verbs) != "[read write execute]" {
		t.Errorf("task token of an action its enqueuer could execute: %+v %v", s, err)
	}
	over = fmt.Errorf("%w: the attempt is over", ErrUnauthenticated)
	if _, err := a.Authenticate(withBearer(task)); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("task token of an attempt that is over: %v", err)
	}
	over = nil
	if s, err := a.Authenticate(withBearer("admin-token-0123456789")); err != nil || s.Name != "admin" {
		t.Errorf("static token: %v %v", s, err)
	}

	now = now.Add(DefaultSessionTTL + time.Second)
	if _, err := a.Authenticate(withCookie(cookie)); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("expired session accepted: %v", err)
	}
	if _, err := a.Authenticate(withBearer(task)); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("expired task token accepted: %v", err)
	}
}

// A session ends when its token leaves the tokens file (a restart with
// another file), though its signature is still good.
func TestSessionOfRemovedToken(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	signer := newSigner(t, &now)
	before, _ := NewTokens(nil, map[string]*Subject{"token-of-bob-0123456": {Name: "bob"}})
	cookie, _, err := NewSessions(signer, before, "c", false).Open(t.Context(), "token-of-bob-0123456")
	if err != nil {
		t.Fatal(err)
	}
	after, _ := NewTokens(nil, map[string]*Subject{"token-of-eve-0123456": {Name: "eve"}})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(cookie)
	if _, _, err := NewSessions(signer, after, "c", false).subject(r); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("session of a removed token: %v", err)
	}
}

func TestLoginCodesWorkOnce(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	signer := newSigner(t, &now)
	tokens, _ := NewTokens(nil, map[string]*Subject{"admin-token-0123456789": Admin()})
	sessions := NewSessions(signer, tokens, "c", false)
	codes := NewLoginCodes(sessions, "admin-token-0123456789", time.Hour)
	a := &RequestAuthenticator{Tokens: tokens, Sessions: sessions, Signer: signer}

	code := codes.Issue()
	cookie, ok := codes.Redeem(code)
	if !ok {
		t.Fatal("fresh code refused")
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(cookie)
	if s, err := a.Authenticate(r); err != nil || s.Name != "admin" {
		t.Errorf("session from a login code: %v %v", s, err)
	}
	if _, ok := codes.Redeem(code); ok {
		t.Error("a code worked twice")
	}
	late := codes.Issue()
	now = now.Add(time.Hour + time.Second)
	if _, ok := codes.Redeem(late); ok {
		t.Error("an expired code worked")
	}
	if _, ok := codes.Redeem("made-up"); ok {
		t.Error("a made-up code worked")
	}
	for range 3 * maxLoginCodes {
		codes.Issue()
	}
	if n := len(codes.codes); n > maxLoginCodes {
		t.Errorf("%d codes kept, want at most %d", n, maxLoginCodes)
	}
}

// TestDeniedNamesWhatWasRefused: a refusal by the cluster names the verb,
// the resource and the namespace; one by grants, the verb, project and
// domain.
func TestDeniedNamesWhatWasRefused(t *testing.T) {
	for _, tc := range []struct {
		d    Denied
		want string
	}{
		{Denied{Subject: "alice", Attributes: Attributes{Verb: VerbAbort, Project: "p", Domain: "d"}},
			`alice may not abort in project "p", domain "d"`},
		{Denied{Subject: "system:serviceaccount:team:bob", Attributes: Attributes{Verb: VerbWrite, Project: "p", Domain: "d",
			Kube: KubeAttributes{Verb: "update", Group: "flyte.org", Resource: "taskactions", Subresource: "status", Namespace: "p-d"}}},
			`system:serviceaccount:team:bob may not update taskactions/status.flyte.org in namespace "p-d" (project "p", domain "d")`},
	} {
		if got := tc.d.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
