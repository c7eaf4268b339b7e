package controlplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// startKeptEtcd starts an etcd in a temp dir, with a space keeper (not
// running: the test calls it) and a client.
func startKeptEtcd(t *testing.T, quota int64) (*spaceKeeper, *clientv3.Client) {
	t.Helper()
	var stopping atomic.Bool
	e, endpoint, err := startEtcd(t.Context(), t.TempDir(), quota, zerolog.Nop(), &stopping)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &spaceKeeper{etcd: e, quota: quota, log: zerolog.Nop()}, c
}

// An etcd filled to its quota refuses writes (NOSPACE) but keeps serving
// reads; once the data is deleted and compacted, the keeper defragments
// the file and clears the alarm, and writes work again.
func TestSpaceKeeperRecoversFromNoSpace(t *testing.T) {
	const quota = 24 << 20
	k, c := startKeptEtcd(t, quota)
	ctx := context.Background()

	value := strings.Repeat("x", 256<<10)
	var full error
	for i := 0; i < 400 && full == nil; i++ {
		_, full = c.Put(ctx, fmt.Sprintf("/k/%03d", i), value)
	}
	if !errors.Is(full, rpctypes.ErrNoSpace) {
		t.Fatalf("filling etcd ended with %v, want %v", full, rpctypes.ErrNoSpace)
	}
	if !k.space().NoSpace {
		t.Fatal("the keeper does not report the NOSPACE alarm")
	}
	if _, err := c.Get(ctx, "/k/000"); err != nil {
		t.Fatalf("a read while full: %v", err)
	}

	// What retention does: delete (etcd allows deletes while full), then
	// compaction (etcd's own, periodic; here at once).
	resp, err := c.Delete(ctx, "/k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("delete while full: %v", err)
	}
	if _, err := c.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	before := k.space()
	// The keeper checks on a ticker; the space freed by the compaction
	// shows once etcd's backend commits it (every 100 ms, later under
	// load), so the test checks as the ticker would until it does.
	k.check(ctx)
	for deadline := time.Now().Add(10 * time.Second); k.space().Defrags == 0 && time.Now().Before(deadline); k.check(ctx) {
		time.Sleep(50 * time.Millisecond)
	}
	after := k.space()
	if after.Defrags != 1 || after.Size >= before.Size || after.NoSpace {
		t.Fatalf("after the check: %+v (before %+v); want one defragmentation, a smaller file, no alarm", after, before)
	}
	if _, err := c.Put(ctx, "/k/again", "value"); err != nil {
		t.Fatalf("a write after recovery: %v", err)
	}
}

// A clean stop compacts every old revision away and gives the freed pages
// back, so the next start maps a file of live objects only.
func TestTidyCompactsAndShrinksTheFile(t *testing.T) {
	k, c := startKeptEtcd(t, defaultQuota)
	ctx := context.Background()

	// 64 objects written 8 times: 32 MiB of old revisions, 4 MiB live.
	value := strings.Repeat("x", 64<<10)
	for round := range 8 {
		for i := range 64 {
			if _, err := c.Put(ctx, fmt.Sprintf("/k/%02d", i), fmt.Sprint(round)+value); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := k.space()
	k.tidy(ctx)
	after := k.space()
	if after.Defrags != 1 || after.Size > before.Size/2 {
		t.Fatalf("after tidy: %+v (before %+v); want one defragmentation and under half the file", after, before)
	}
	if _, err := c.Get(ctx, "/k/00", clientv3.WithRev(2)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("an old revision after tidy: %v, want %v", err, rpctypes.ErrCompacted)
	}
	got, err := c.Get(ctx, "/k/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || got.Count != 64 {
		t.Fatalf("live keys after tidy: %v, %v; want 64", got, err)
	}
}
