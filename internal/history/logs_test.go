package history

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "taskactions/api/v1"
	"taskactions/internal/logs"
)

func keyOf(id v1.RunID, action string, attempt int, st logs.Stream) logs.Key {
	return logs.Key{Project: id.Project, Domain: id.Domain, Run: id.Run, Action: action, Attempt: attempt, Stream: st}
}

// readLog reads [off, off+n) of a stream through LogChunks.
func readLog(t *testing.T, s *Store, k logs.Key, off int64, n int) string {
	t.Helper()
	chunks, err := s.LogChunks(ctx, k, off, n)
	if err != nil {
		t.Fatalf("LogChunks(%d, %d): %v", off, n, err)
	}
	var b bytes.Buffer
	at := off
	for _, c := range chunks {
		if c.Off > at || c.End() <= at {
			t.Fatalf("LogChunks(%d, %d): a chunk [%d, %d) after byte %d", off, n, c.Off, c.End(), at)
		}
		b.Write(c.Data[at-c.Off:])
		at = c.End()
	}
	return string(b.Bytes()[:min(b.Len(), n)])
}

func logStat(t *testing.T, s *Store, k logs.Key) (int64, int64) {
	t.Helper()
	size, dropped, err := s.LogStat(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	return size, dropped
}

// Written in chunks at their offsets, a log reads back the same from any
// offset, across chunk boundaries; a write again of what is stored (a
// retry) changes nothing, and a write past the end is refused.
func TestLogWriteAndRead(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			k := keyOf(rid, "a", 1, logs.Stdout)
			if size, dropped := logStat(t, s, k); size != 0 || dropped != 0 {
				t.Fatalf("a log never written: size %d, dropped %d", size, dropped)
			}
			if got := readLog(t, s, k, 0, 100); got != "" {
				t.Fatalf("a log never written reads %q", got)
			}
			text := ""
			for i, part := range []string{"hello ", "wörld\n", "\x00binary\xff", strings.Repeat("x", 1000), "end"} {
				size, err := s.LogWrite(ctx, k, int64(len(text)), []byte(part), int64(i))
				text += part
				if err != nil || size != int64(len(text)) {
					t.Fatalf("LogWrite %d: %d, %v", i, size, err)
				}
			}
			for _, c := range []struct {
				off int64
				n   int
			}{{0, len(text)}, {0, 3}, {3, 10}, {6, 6}, {11, 1}, {12, 2000}, {int64(len(text)) - 1, 10}, {int64(len(text)), 10}, {5000, 1}} {
				want := text[min(int(c.off), len(text)):min(int(c.off)+c.n, len(text))]
				if got := readLog(t, s, k, c.off, c.n); got != want {
					t.Errorf("[%d, +%d): %q, want %q", c.off, c.n, got, want)
				}
			}
			// A retry of the last two writes, one in part new.
			if size, err := s.LogWrite(ctx, k, int64(len(text))-3, []byte("end, again"), 9); err != nil || size != int64(len(text))+7 {
				t.Fatalf("a write over the end: %d, %v", size, err)
			}
			text += ", again"
			if size, err := s.LogWrite(ctx, k, 0, []byte("hello "), 2); err != nil || size != int64(len(text)) {
				t.Fatalf("a write of what is stored: %d, %v", size, err)
			}
			if got := readLog(t, s, k, 0, 10000); got != text {
				t.Fatalf("after the retries: %q, want %q", got, text)
			}
			if size, dropped := logStat(t, s, k); size != int64(len(text)) || dropped != 9 {
				t.Errorf("stat: size %d, dropped %d; want %d, 9 (dropped never goes back)", size, dropped, len(text))
			}
			if _, err := s.LogWrite(ctx, k, int64(len(text))+1, []byte("gap"), 0); !errors.Is(err, logs.ErrGap) {
				t.Errorf("a write past the end: %v, want ErrGap", err)
			}
			if err := s.Health(); err != nil {
				t.Errorf("a write past the end made the store unhealthy: %v", err)
			}
			// The other stream, attempt and action are other logs.
			for _, other := range []logs.Key{keyOf(rid, "a", 1, logs.Stderr), keyOf(rid, "a", 2, logs.Stdout), keyOf(rid, "b", 1, logs.Stdout)} {
				if got := readLog(t, s, other, 0, 100); got != "" {
					t.Errorf("%s reads %q", other, got)
				}
			}
		})
	}
}

// Appends from two stores on one database (two replicas) keep the bound
// of the attempt, over both streams: what fit is given is the tally of
// every append before, whichever store took it.
func TestLogAppendKeepsTheBoundAcrossStores(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			dsn := st.dsn(t)
			a, b := openStore(t, dsn), openStore(t, dsn)
			const bound = 1000
			fit := func(p []byte) func(logs.Tally) ([]byte, int64) {
				return func(t logs.Tally) ([]byte, int64) {
					keep := p[:min(int64(len(p)), max(bound-t.Used, 0))]
					return keep, int64(len(p) - len(keep))
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, 200)
			for i := range 100 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, stream := a, logs.Stdout
					if i%2 == 1 {
						s, stream = b, logs.Stderr
					}
					if _, _, err := s.LogAppend(ctx, keyOf(rid, "x", 1, stream), fit([]byte(fmt.Sprintf("%02d-4567890123456789\n", i)))); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			var used, dropped int64
			for _, stream := range []logs.Stream{logs.Stdout, logs.Stderr} {
				k := keyOf(rid, "x", 1, stream)
				size, d := logStat(t, a, k)
				text := readLog(t, b, k, 0, 10000)
				if int64(len(text)) != size || size%20 != 0 {
					t.Errorf("%s: %d bytes read, size %d: appends interleaved or cut", stream, len(text), size)
				}
				used, dropped = used+size, dropped+d
			}
			if used != bound || dropped != 100*20-bound {
				t.Errorf("kept %d, dropped %d; want %d and %d", used, dropped, bound, 100*20-bound)
			}
		})
	}
}

// A run's logs go with it, an action's with it; what a replica ships
// after the deletion goes with the tombstones, when they are purged.
func TestLogsGoWithTheirRunAndActions(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			other := v1.RunID{Project: "p", Domain: "d", Run: "other"}
			record(t, s, act(rid, "r", "", "ur", "RUNNING", 0, 0), act(rid, "a", "r", "ua", "RUNNING", 1, 1),
				act(rid, "b", "r", "ub", "RUNNING", 2, 2), act(other, "r", "", "uo", "RUNNING", 0, 0))
			write := func(id v1.RunID, action string) logs.Key {
				t.Helper()
				k := keyOf(id, action, 1, logs.Stdout)
				size, _ := logStat(t, s, k)
				if _, err := s.LogWrite(ctx, k, size, []byte(action+"\n"), 0); err != nil {
					t.Fatal(err)
				}
				return k
			}
			gone := func(k logs.Key, want bool) {
				t.Helper()
				size, _ := logStat(t, s, k)
				if text := readLog(t, s, k, 0, 100); (size == 0 && text == "") != want {
					t.Errorf("%s: size %d, %q; gone: want %v", k, size, text, want)
				}
			}
			ka, kb, kr, ko := write(rid, "a"), write(rid, "b"), write(rid, "r"), write(other, "r")
			if _, _, err := s.DeleteActions(ctx, rid, "a", nil); err != nil {
				t.Fatal(err)
			}
			gone(ka, true)
			gone(kb, false)
			if _, _, err := s.DeleteRun(ctx, rid, nil); err != nil {
				t.Fatal(err)
			}
			gone(kb, true)
			gone(kr, true)
			gone(ko, false)
			write(rid, "a") // a replica ships late
			gone(ka, false)
			if _, err := s.Purge(ctx, time.Now().Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			gone(ka, true)
			gone(ko, false)
		})
	}
}
