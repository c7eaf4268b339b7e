package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/embed"
)

// etcd's file carries a tail of up to 16 MiB past its last page, and etcd
// maps the whole file into memory at each start (MAP_POPULATE): measured,
// 16.7 of the 35.8 MiB it held with 10,000 live actions. A start cuts
// the tail off first; etcd then starts from the file with every key, and
// grows it again as it needs to.
func TestEtcdFileTrimmedAtStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "etcd", "member", "snap", "db")
	value := strings.Repeat("v", 4096)

	e := startTestEtcd(t, dir)
	putKeys(t, e, 0, 500, value)
	e.Close()
	before := fileSize(t, db)
	used, err := boltHighWater(db)
	if err != nil {
		t.Fatal(err)
	}
	if before-used < 8<<20 {
		t.Fatalf("etcd left no tail to trim (file %d, pages %d bytes): the test proves nothing", before, used)
	}

	e = startTestEtcd(t, dir)
	if rss := residentBytes(t, db); rss > used+1<<20 {
		t.Errorf("etcd's file mapped %d bytes resident at start, want about its pages' %d (the file was %d)", rss, used, before)
	}
	putKeys(t, e, 500, 1000, value) // grows the file again
	e.Close()
	e = startTestEtcd(t, dir)
	defer e.Close()
	r, err := e.Server.Range(t.Context(), &etcdserverpb.RangeRequest{Key: []byte("k"), RangeEnd: []byte("l"), CountOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Count != 1000 {
		t.Errorf("keys after a trim, more writes and a restart: %d, want 1000", r.Count)
	}
}

// residentBytes is how much of the file this process's mappings of it
// hold in memory.
func residentBytes(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	inFile := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			inFile = len(f) >= 6 && f[5] == path
		case inFile && len(f) == 3 && f[0] == "Rss:":
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			total += kb << 10
		}
	}
	return total
}

func startTestEtcd(t *testing.T, dir string) *embed.Etcd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stopping atomic.Bool
	e, _, err := startEtcd(ctx, dir, 0, zerolog.Nop(), &stopping)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	return e
}

func putKeys(t *testing.T, e *embed.Etcd, from, to int, value string) {
	t.Helper()
	for i := from; i < to; i++ {
		req := &etcdserverpb.PutRequest{Key: fmt.Appendf(nil, "k%05d", i), Value: []byte(value)}
		if _, err := e.Server.Put(t.Context(), req); err != nil {
			t.Fatalf("put: %v", err)
		}
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
