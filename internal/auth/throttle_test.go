package auth

import (
	"errors"
	"fmt"
	"testing"
)

func TestThrottle(t *testing.T) {
	th := NewThrottle(3, 1)
	wrong := func() error { return fmt.Errorf("%w: wrong", ErrUnauthenticated) }
	right := func() error { return nil }
	down := func() error { return ErrUnavailable }

	// Successes and failures that are not the credential's take nothing.
	for range 10 {
		if err := th.Check("10.0.0.1:5000", "good", right); err != nil {
			t.Fatal(err)
		}
		if err := th.Check("10.0.0.1:5000", "x", down); !errors.Is(err, ErrUnavailable) {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if err := th.Check("10.0.0.1:5001", fmt.Sprint("guess", i), wrong); !errors.Is(err, ErrUnauthenticated) {
			t.Fatalf("failure %d: %v, want it checked", i, err)
		}
	}
	var throttled *Throttled
	checked := false
	err := th.Check("10.0.0.1:5002", "guess-right", func() error { checked = true; return nil })
	if !errors.As(err, &throttled) || checked || throttled.RetryAfter <= 0 {
		t.Fatalf("after the burst: %v (checked %v), want a throttle with a wait, unchecked", err, checked)
	}
	// The credential that succeeded from the address before still works.
	if err := th.Check("10.0.0.1:6000", "good", right); err != nil {
		t.Errorf("a credential that worked before, during the throttle: %v", err)
	}
	// Other addresses are not affected; an IPv6 /64 is one address.
	if err := th.Check("10.0.0.2:5000", "guess", wrong); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("another address: %v", err)
	}
	for i := range 3 {
		_ = th.Check(fmt.Sprintf("[2001:db8::%d]:1", i+1), "guess", wrong)
	}
	if err := th.Check("[2001:db8::ff]:1", "guess", wrong); !errors.As(err, &throttled) {
		t.Errorf("the same /64: %v, want throttled", err)
	}
	if err := th.Check("[2001:db8:0:1::1]:1", "guess", wrong); !errors.Is(err, ErrUnauthenticated) || errors.As(err, &throttled) {
		t.Errorf("another /64: %v, want checked", err)
	}
}

func TestThrottleIsBounded(t *testing.T) {
	th := NewThrottle(1, 1)
	for i := range 2 * throttleEntries {
		_ = th.Check(fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255), "guess", func() error { return ErrUnauthenticated })
	}
	if n := len(th.buckets.Keys()); n > throttleEntries {
		t.Errorf("%d addresses kept, want at most %d", n, throttleEntries)
	}
}
