package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLost refuses a write of a replica whose hold on a Lease may have
// ended.
var ErrLost = errors.New("this replica may no longer hold the Lease")

// Clock is a Lease lock that remembers when this replica last acquired
// or renewed the Lease: the start of the last write of the Lease that
// named it holder and worked.
type Clock struct {
	resourcelock.Interface
	renewed atomic.Int64 // unix nanoseconds; 0: never, or released
}

// NewClock wraps lock.
func NewClock(lock resourcelock.Interface) *Clock { return &Clock{Interface: lock} }

func (l *Clock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec, func() error { return l.Interface.Create(ctx, rec) })
}

func (l *Clock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(rec, func() error { return l.Interface.Update(ctx, rec) })
}

func (l *Clock) write(rec resourcelock.LeaderElectionRecord, do func() error) error {
	start := time.Now()
	err := do()
	if err == nil && rec.HolderIdentity == l.Identity() {
		l.renewed.Store(start.UnixNano())
	} else if err == nil {
		l.renewed.Store(0) // released
	}
	return err
}

// Fence is how long a holder's writes are safe: another replica takes
// the Lease only after seeing it unrenewed for the whole lease duration,
// counted from after the last renewal started; the writes stop a margin
// before that (valid: the renew deadline).
type Fence struct {
	clock *Clock
	valid time.Duration
}

// NewFence is the fence of clock's Lease.
func NewFence(clock *Clock, valid time.Duration) *Fence { return &Fence{clock: clock, valid: valid} }

// Until is when this replica's writes stop being safe (the zero time
// when it does not hold the Lease).
func (f *Fence) Until() time.Time {
	renewed := f.clock.renewed.Load()
	if renewed == 0 {
		return time.Time{}
	}
	return time.Unix(0, renewed).Add(f.valid)
}

type fenceKey struct{}

// WithFence marks ctx: a write made with it, or with a context derived
// from it, through a client whose transport is Fenced, goes out only
// while f holds. Work run under a Lease takes its context from here.
func WithFence(ctx context.Context, f *Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// Fenced wraps a client's transport: a request whose context carries a
// fence (WithFence) and would change something (any method but GET,
// HEAD and OPTIONS) is refused with ErrLost once the fence has passed,
// and sent bounded by it otherwise; other requests pass as they are.
// Reads are never fenced: a stale read does no harm a fenced write could
// turn into a conflict with the next holder's.
func Fenced(next http.RoundTripper) http.RoundTripper { return fenced{next} }

type fenced struct{ next http.RoundTripper }

func (t fenced) RoundTrip(r *http.Request) (*http.Response, error) {
	f, ok := r.Context().Value(fenceKey{}).(*Fence)
	if !ok {
		return t.next.RoundTrip(r)
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return t.next.RoundTrip(r)
	}
	until := f.Until()
	if !time.Now().Before(until) {
		return nil, fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, ErrLost)
	}
	ctx, cancel := context.WithDeadline(r.Context(), until)
	resp, err := t.next.RoundTrip(r.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	return resp, nil
}

// cancelOnClose releases a request's deadline once its answer is read.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	defer b.cancel()
	return b.ReadCloser.Close()
}
