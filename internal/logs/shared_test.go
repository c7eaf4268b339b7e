package logs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/history"
	"taskactions/internal/logs"
	"taskactions/internal/testenv/pg"
)

// One PostgreSQL for the package's tests of the shared store, as
// internal/history's tests have.
var (
	pgServer *pg.Postgres
	pgErr    error
	pgDBs    atomic.Int64
)

func TestMain(m *testing.M) {
	pgServer, pgErr = pg.StartPostgres()
	code := m.Run()
	if pgServer != nil {
		pgServer.Stop()
	}
	os.Exit(code)
}

var ctx = context.Background()

// replicas are two stores of logs on two disks sharing one history
// database, as two replicas are; each database opened twice, as two
// processes do.
type replicas struct {
	a, b   *logs.Store
	ha, hb *history.Store
}

func sharedCases(t *testing.T, maxBytes int64, each func(t *testing.T, r replicas)) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			dsn := filepath.Join(t.TempDir(), "history.db")
			if name == "postgres" {
				if pgErr != nil {
					t.Fatalf("PostgreSQL did not start: %v", pgErr)
				}
				var err error
				if dsn, err = pgServer.CreateDatabase(fmt.Sprintf("logs_test_%d", pgDBs.Add(1))); err != nil {
					t.Fatal(err)
				}
			}
			var r replicas
			r.ha, r.hb = openHistory(t, dsn), openHistory(t, dsn)
			r.a, r.b = logs.New(t.TempDir(), maxBytes), logs.New(t.TempDir(), maxBytes)
			r.a.Share(r.ha, func(err error) { t.Errorf("replica a: %v", err) })
			r.b.Share(r.hb, func(err error) { t.Errorf("replica b: %v", err) })
			each(t, r)
		})
	}
}

func openHistory(t *testing.T, dsn string) *history.Store {
	t.Helper()
	h, err := history.Open(ctx, dsn, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func key(attempt int, st logs.Stream) logs.Key {
	return logs.Key{Project: "p", Domain: "d", Run: "r", Action: "a", Attempt: attempt, Stream: st}
}

// readWhole reads a log through OpenRead, as a GET does.
func readWhole(t *testing.T, s *logs.Store, k logs.Key) (string, int64) {
	t.Helper()
	r, err := s.OpenRead(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	size, _ := r.Seek(0, io.SeekEnd)
	b, err := io.ReadAll(io.NewSectionReader(r, 0, size))
	if err != nil {
		t.Fatal(err)
	}
	return string(b), r.Dropped()
}

// A process's output written on one replica is read on the other, the
// same bytes at the same offsets, whole, by range and followed as it
// grows, within about ShipEvery of its write; the close ships the rest.
func TestAnotherReplicaReadsAndFollowsAWrittenLog(t *testing.T) {
	sharedCases(t, 0, func(t *testing.T, r replicas) {
		w, err := r.a.Create(key(1, logs.Stdout))
		if err != nil {
			t.Fatal(err)
		}
		f, err := r.b.Follow(ctx, key(1, logs.Stdout))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var followed bytes.Buffer
		var lag time.Duration
		buf := make([]byte, 100)
		for i := range 10 {
			line := fmt.Sprintf("line %d: héllo\n", i)
			wrote := time.Now()
			if _, err := w.Write([]byte(line)); err != nil {
				t.Fatal(err)
			}
			for want := followed.Len() + len(line); followed.Len() < want; {
				n, err := f.ReadAt(buf, int64(followed.Len()))
				if err != nil && !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				followed.Write(buf[:n])
				if n == 0 {
					if time.Since(wrote) > 5*time.Second {
						t.Fatalf("line %d not on the other replica after 5 s", i)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			lag = max(lag, time.Since(wrote))
		}
		t.Logf("the other replica saw each line within %s (ShipEvery %s)", lag.Round(time.Millisecond), logs.ShipEvery)
		if _, err := w.Write([]byte("the last line, no newline")); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		file, err := os.ReadFile(r.a.Path(key(1, logs.Stdout)))
		if err != nil {
			t.Fatal(err)
		}
		// Shipped by Close: no wait.
		if got, dropped := readWhole(t, r.b, key(1, logs.Stdout)); got != string(file) || dropped != 0 {
			t.Fatalf("the other replica reads %d bytes (dropped %d), the writer's file has %d", len(got), dropped, len(file))
		}
		if !strings.HasPrefix(string(file), followed.String()) {
			t.Fatal("what was followed is not the file's beginning")
		}
		if _, err := os.Stat(r.b.Path(key(1, logs.Stdout))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the reader has a file of the log: %v", err)
		}
		rd, err := r.b.OpenRead(ctx, key(1, logs.Stdout))
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		for _, c := range [][2]int{{0, 5}, {7, 40}, {int(rd.Size()) - 3, 3}, {100, 1}} {
			p := make([]byte, c[1])
			if n, err := rd.ReadAt(p, int64(c[0])); n != c[1] || string(p) != string(file[c[0]:c[0]+c[1]]) {
				t.Errorf("bytes [%d, +%d): %q (%v), want %q", c[0], c[1], p[:n], err, file[c[0]:c[0]+c[1]])
			}
		}
		if n, err := rd.ReadAt(make([]byte, 10), rd.Size()); n != 0 || err != io.EOF {
			t.Errorf("read at the end: %d, %v", n, err)
		}
		if got, _ := readWhole(t, r.b, key(1, logs.Stderr)); got != "" {
			t.Errorf("stderr, never written, reads %q", got)
		}
	})
}

// The bound cuts the log the same for every replica: the notice and the
// count of what was dropped reach the shared store too.
func TestBoundReachesTheOtherReplica(t *testing.T) {
	sharedCases(t, 10, func(t *testing.T, r replicas) {
		w, err := r.a.Create(key(1, logs.Stdout))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"12345678", "90ab", "cdef"} {
			if _, err := w.Write([]byte(p)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		file, _ := os.ReadFile(r.a.Path(key(1, logs.Stdout)))
		got, dropped := readWhole(t, r.b, key(1, logs.Stdout))
		if got != string(file) || dropped != 6 || !strings.Contains(got, "reached --log-max-bytes (10 bytes)") {
			t.Errorf("the other replica reads %q, dropped %d; the file is %q, dropped 6", got, dropped, file)
		}
	})
}

// What the API appends goes to the shared store only (the next POST may
// land on the other replica), within the bound of the attempt whichever
// replica takes it; a follower on the replica that took it wakes at once.
func TestAppendsThroughEitherReplica(t *testing.T) {
	sharedCases(t, 20, func(t *testing.T, r replicas) {
		f, err := r.a.Follow(ctx, key(1, logs.Stdout))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		changed := f.Changed()
		want := ""
		for i, s := range []*logs.Store{r.a, r.b, r.a, r.b} {
			line := fmt.Sprintf("s%d%c\n", i, "ab"[i%2])
			size, dropped, err := s.Append(ctx, key(1, logs.Stdout), []byte(line))
			if err != nil {
				t.Fatal(err)
			}
			want += line
			if size != int64(len(want)) || dropped != 0 {
				t.Fatalf("append %d: size %d, dropped %d; want %d, 0", i, size, dropped, len(want))
			}
			if i == 0 {
				select {
				case <-changed:
				case <-time.After(5 * time.Second):
					t.Fatal("the follower on the replica that took the append was not woken")
				}
			}
			if i == 1 {
				// The bound is the attempt's: stderr's bytes count too.
				if _, _, err := r.b.Append(ctx, key(1, logs.Stderr), []byte("err\n")); err != nil {
					t.Fatal(err)
				}
			}
		}
		// 16 + 4 of stderr: the bound is reached; the next bytes drop.
		_, dropped, err := r.b.Append(ctx, key(1, logs.Stdout), []byte("more\n"))
		if err != nil || dropped != 5 {
			t.Fatalf("past the bound: dropped %d, %v; want 5", dropped, err)
		}
		want += "[taskactions: this attempt's logs reached --log-max-bytes (20 bytes); the rest of its stdout is dropped]\n"
		for _, s := range []*logs.Store{r.a, r.b} {
			if got, d := readWhole(t, s, key(1, logs.Stdout)); got != want || d != 5 {
				t.Errorf("read %q (dropped %d), want %q (5)", got, d, want)
			}
			if _, err := os.Stat(s.Path(key(1, logs.Stdout))); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("an append made a local file: %v", err)
			}
		}
		buf := make([]byte, 200)
		if n, _ := f.ReadAt(buf, 0); string(buf[:n]) != want || f.Dropped() != 5 {
			t.Errorf("the follower reads %q (dropped %d)", buf[:n], f.Dropped())
		}
	})
}

// An attempt begun again on a replica without the file (a new pod) writes
// on after what the store has, at the same offsets; a file that holds more
// than the store (the writer died before shipping it) is shipped when a
// Writer opens it again.
func TestWriterCatchesUpWithTheStore(t *testing.T) {
	sharedCases(t, 0, func(t *testing.T, r replicas) {
		w, _ := r.a.Create(key(1, logs.Stdout))
		w.Write([]byte("first run\n"))
		w.Close()
		w, _ = r.b.Create(key(1, logs.Stdout))
		w.Write([]byte("second run\n"))
		w.Close()
		want := "first run\nsecond run\n"
		if b, _ := os.ReadFile(r.b.Path(key(1, logs.Stdout))); string(b) != want {
			t.Errorf("the new replica's file: %q, want %q", b, want)
		}
		if got, _ := readWhole(t, r.b, key(1, logs.Stdout)); got != want {
			t.Errorf("the store: %q, want %q", got, want)
		}

		// Bytes the store never got: replica a's file of attempt 2 grows
		// behind its back (as if the shipment before a crash was lost).
		k := key(2, logs.Stderr)
		path := r.a.Path(k)
		if err := os.WriteFile(path, []byte("unshipped\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		w, _ = r.a.Create(k)
		w.Write([]byte("after\n"))
		w.Close()
		if got, _ := readWhole(t, r.b, k); got != "unshipped\nafter\n" {
			t.Errorf("the store after a restart: %q", got)
		}
	})
}

// flaky fails its first writes, as a store that is away for a while.
type flaky struct {
	logs.Shared
	mu    sync.Mutex
	fails int
}

func (f *flaky) LogWrite(ctx context.Context, k logs.Key, off int64, p []byte, dropped int64) (int64, error) {
	f.mu.Lock()
	fail := f.fails > 0
	f.fails--
	f.mu.Unlock()
	if fail {
		return 0, errors.New("the store is away")
	}
	return f.Shared.LogWrite(ctx, k, off, p, dropped)
}

// A shipment that fails is tried again from where the store is; the
// failure is told once, not at every try.
func TestShipperRetries(t *testing.T) {
	sharedCases(t, 0, func(t *testing.T, r replicas) {
		var told atomic.Int32
		r.a.Share(&flaky{Shared: r.ha, fails: 3}, func(error) { told.Add(1) })
		w, _ := r.a.Create(key(1, logs.Stdout))
		w.Write([]byte("one\n"))
		time.Sleep(100 * time.Millisecond)
		w.Write([]byte("two\n"))
		w.Close()
		if got, _ := readWhole(t, r.b, key(1, logs.Stdout)); got != "one\ntwo\n" {
			t.Errorf("after the store came back: %q", got)
		}
		if n := told.Load(); n != 1 {
			t.Errorf("the failure was told %d times, want once", n)
		}
	})
}

// A log deleted from the store while its task still writes (its run was
// deleted) is not written there again, and that is no failure: the
// replicas' onErr (t.Errorf) hears nothing.
func TestShipperStopsAtADeletedLog(t *testing.T) {
	sharedCases(t, 0, func(t *testing.T, r replicas) {
		w, _ := r.a.Create(key(1, logs.Stdout))
		w.Write([]byte("before\n"))
		deadline := time.Now().Add(5 * time.Second)
		for got, _ := readWhole(t, r.b, key(1, logs.Stdout)); got != "before\n"; got, _ = readWhole(t, r.b, key(1, logs.Stdout)) {
			if time.Now().After(deadline) {
				t.Fatalf("not shipped: %q", got)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, _, err := r.hb.DeleteRun(ctx, v1.RunID{Project: "p", Domain: "d", Run: "r"}, nil); err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("after\n"))
		w.Close()
		if got, _ := readWhole(t, r.b, key(1, logs.Stdout)); got != "" {
			t.Errorf("the deleted log reads %q", got)
		}
		if err := r.ha.Health(); err != nil {
			t.Errorf("the writer's store is unhealthy: %v", err)
		}
	})
}
