package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Signer makes and checks credentials the server hands out itself (session
// cookies, task tokens): claims in JSON, with an HMAC-SHA256 of them under a
// key kept in the data dir. They survive a restart, which matters to a
// dashboard: a plain EventSource refused once gives up for good.
type Signer struct {
	key []byte
	now func() time.Time
}

// NewSigner returns a signer with key (at least 32 bytes).
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < 32 {
		return nil, errors.New("signing key shorter than 32 bytes")
	}
	return &Signer{key: key, now: time.Now}, nil
}

// Kinds of signed credentials; a credential of one kind is never accepted
// as another.
const (
	kindSession = "session"
	kindTask    = "task"
)

type claims struct {
	Kind string `json:"k"`
	// Sub is the subject's name for a task token; for a session, the hex
	// SHA-256 of the token it was opened with, so that a token removed from
	// the tokens file ends its sessions too.
	Sub    string  `json:"s"`
	Grants []Grant `json:"g,omitempty"`
	// ID names a session, which a logout ends; Opened is when it began
	// (Unix nanoseconds), for a logout that ends all of a token's
	// sessions opened before it. Cookies from before these fields read ""
	// and 0: a logout with one ends every session of its token.
	ID     string `json:"i,omitempty"`
	Opened int64  `json:"t,omitempty"`
	Exp    int64  `json:"e"`
	// Task is the attempt a task token is for.
	Task *TaskScope `json:"a,omitempty"`
	// Cluster is the identity the cluster gave a session's token
	// (TokenReview), which the session then acts as.
	Cluster *ClusterIdentity `json:"c,omitempty"`
}

var b64 = base64.RawURLEncoding

func (s *Signer) sign(c claims) string {
	payload, _ := json.Marshal(c)
	p := b64.EncodeToString(payload)
	return p + "." + b64.EncodeToString(s.mac(p))
}

func (s *Signer) mac(p string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(p))
	return m.Sum(nil)
}

var errBadCredential = errors.New("not a valid credential")

// verify checks the signature, kind and expiry.
func (s *Signer) verify(v, kind string) (claims, error) {
	var c claims
	p, sig, ok := strings.Cut(v, ".")
	if !ok {
		return c, errBadCredential
	}
	got, err := b64.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(p)) {
		return c, errBadCredential
	}
	payload, err := b64.DecodeString(p)
	if err != nil || json.Unmarshal(payload, &c) != nil || c.Kind != kind {
		return c, errBadCredential
	}
	if s.now().Unix() >= c.Exp {
		return c, fmt.Errorf("%w: expired", errBadCredential)
	}
	return c, nil
}

// taskTokenPrefix marks a task token among bearer tokens.
const taskTokenPrefix = "ta1."

// TaskToken returns a bearer token for one attempt of a task, valid for
// ttl at most: the executor gives one to each process it starts
// (TASKACTIONS_TOKEN), so the task can call the API without the admin
// token. The authenticator checks it against the live action on every
// request (RequestAuthenticator.Attempts), so it ends with the attempt.
func (s *Signer) TaskToken(t TaskScope, ttl time.Duration) string {
	return taskTokenPrefix + s.sign(claims{Kind: kindTask, Sub: t.Name(), Task: &t, Exp: s.now().Add(ttl).Unix()})
}

// taskSubject checks a task token's signature and expiry. A token without
// a scope (from before tokens named their attempt: every verb for a week)
// is not accepted.
func (s *Signer) taskSubject(token string) (*Subject, error) {
	c, err := s.verify(strings.TrimPrefix(token, taskTokenPrefix), kindTask)
	if err != nil {
		return nil, err
	}
	if c.Task == nil {
		return nil, fmt.Errorf("%w: a task token from an older server", errBadCredential)
	}
	return &Subject{Name: c.Task.Name(), Grants: c.Task.grants(), Task: c.Task}, nil
}
