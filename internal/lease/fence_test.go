package lease

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A fenced write goes out while the fence holds and is refused after;
// reads and unfenced requests always go; what went out reached a real
// listener.
func TestFencedTransport(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer srv.Close()
	client := &http.Client{Transport: Fenced(http.DefaultTransport)}
	clock := NewClock(nil)
	f := NewFence(clock, time.Minute)
	fencedCtx := WithFence(context.Background(), f)
	do := func(ctx context.Context, method string) error {
		req, err := http.NewRequestWithContext(ctx, method, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	cases := []struct {
		name    string
		renewed time.Time // zero: never held
		ctx     context.Context
		method  string
		refused bool
	}{
		{"never held: a fenced write", time.Time{}, fencedCtx, http.MethodPut, true},
		{"held: a fenced write", time.Now(), fencedCtx, http.MethodPatch, false},
		{"past the fence: a fenced write", time.Now().Add(-2 * time.Minute), fencedCtx, http.MethodPost, true},
		{"past the fence: a fenced read", time.Now().Add(-2 * time.Minute), fencedCtx, http.MethodGet, false},
		{"past the fence: an unfenced write", time.Now().Add(-2 * time.Minute), context.Background(), http.MethodDelete, false},
	}
	for _, tc := range cases {
		if tc.renewed.IsZero() {
			clock.renewed.Store(0)
		} else {
			clock.renewed.Store(tc.renewed.UnixNano())
		}
		before := got.Load()
		err := do(tc.ctx, tc.method)
		sent := got.Load() > before
		if refused := errors.Is(err, ErrLost); refused != tc.refused || sent == tc.refused {
			t.Errorf("%s: error %v, reached the server %v", tc.name, err, sent)
		}
	}
}
