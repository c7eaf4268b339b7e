package auth

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/cache"
)

// ErrThrottled is a credential not checked because its client address
// failed too often: a *Throttled says for how long.
var ErrThrottled = errors.New("too many failed logins or bad tokens from this address")

// Throttled is a refusal of the Throttle, with when to try again.
type Throttled struct{ RetryAfter time.Duration }

func (e *Throttled) Error() string {
	return fmt.Sprintf("%v; try again in %s", ErrThrottled, e.RetryAfter)
}

// Unwrap makes a Throttled an ErrThrottled.
func (e *Throttled) Unwrap() error { return ErrThrottled }

// Throttle limits failed credential checks (a wrong token at login, a bad
// bearer token or cookie) per client address, so that guessing costs time:
// each address has a bucket of Burst failures, refilled at Rate. A success
// takes nothing from it. While an address's bucket is empty, its
// credentials are refused unchecked (checking them would tell a guess
// that is right), except those that succeeded from it before: a client
// already logged in keeps working while another on its address guesses.
// Both tables are bounded (least recently used go first) and forget what
// has not been used for a while.
type Throttle struct {
	rate  rate.Limit
	burst int

	mu       sync.Mutex            // makes get-or-create of a bucket atomic
	buckets  *cache.LRUExpireCache // address key -> *rate.Limiter
	accepted *cache.LRUExpireCache // sha256 of address key and credential -> struct{}
}

// Defaults of NewThrottle: 20 failures at once, then one a second.
const (
	DefaultFailureBurst = 20
	DefaultFailureRate  = 1 // per second
	throttleEntries     = 16384
	// acceptedFor is how long a credential that succeeded from an
	// address stays good there during a throttle.
	acceptedFor = time.Hour
)

// NewThrottle returns a throttle allowing burst failures per address at
// once, refilled at perSecond.
func NewThrottle(burst int, perSecond float64) *Throttle {
	return &Throttle{
		rate: rate.Limit(perSecond), burst: burst,
		buckets: cache.NewLRUExpireCache(throttleEntries), accepted: cache.NewLRUExpireCache(throttleEntries),
	}
}

// Check runs check, the verification of credential sent from addr (a
// request's RemoteAddr), unless the address is throttled: then it returns
// a *Throttled. An error of check that wraps ErrUnauthenticated counts as
// a failure of the address; a nil marks credential as good there.
func (t *Throttle) Check(addr, credential string, check func() error) error {
	if t == nil {
		return check()
	}
	key := addressKey(addr)
	good := sha256.Sum256([]byte(key + "\x00" + credential))
	if wait := t.wait(key); wait > 0 {
		if _, ok := t.accepted.Get(good); !ok {
			return &Throttled{RetryAfter: wait}
		}
	}
	err := check()
	switch {
	case err == nil:
		t.accepted.Add(good, struct{}{}, acceptedFor)
	case errors.Is(err, ErrUnauthenticated):
		t.failed(key)
	}
	return err
}

// wait is how long until addr may fail again: 0 when it may now.
func (t *Throttle) wait(key string) time.Duration {
	v, ok := t.buckets.Get(key)
	if !ok {
		return 0
	}
	tokens := v.(*rate.Limiter).Tokens()
	if tokens >= 1 {
		return 0
	}
	// Whole seconds, as Retry-After gives them.
	return time.Duration(math.Ceil((1-tokens)/float64(t.rate))) * time.Second
}

func (t *Throttle) failed(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var l *rate.Limiter
	if v, ok := t.buckets.Get(key); ok {
		l = v.(*rate.Limiter)
	} else {
		l = rate.NewLimiter(t.rate, t.burst)
	}
	l.Allow()
	// Kept until the bucket would be full again, and a little more.
	t.buckets.Add(key, l, time.Duration(float64(t.burst)/float64(t.rate)*float64(time.Second))+time.Minute)
}

// addressKey is the client a request comes from: its IP, or for IPv6 its
// /64 (one host commonly holds a whole /64).
func addressKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
