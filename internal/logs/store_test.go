package logs

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"
)

func key(attempt int, st Stream) Key {
	return Key{Project: "p", Domain: "d", Run: "r", Action: "a", Attempt: attempt, Stream: st}
}

func TestBoundIsPerAttemptAndSaysWhatWasDropped(t *testing.T) {
	for _, c := range []struct {
		name   string
		writes []struct {
			st   Stream
			text string
		}
		wantOut string
		wantErr string
		dropOut int64
		dropErr int64
	}{
		{name: "under the bound", writes: []struct {
			st   Stream
			text string
		}{{Stdout, "12345\n"}, {Stderr, "ab\n"}},
			wantOut: "12345\n", wantErr: "ab\n"},
		{name: "stdout fills it", writes: []struct {
			st   Stream
			text string
		}{{Stdout, "1234567890ab"}, {Stderr, "err\n"}},
			wantOut: "1234567890\n" + notice(10, Stdout), wantErr: notice(10, Stderr), dropOut: 2, dropErr: 4},
		{name: "shared between the streams", writes: []struct {
			st   Stream
			text string
		}{{Stdout, "12345\n"}, {Stderr, "abcdef"}},
			wantOut: "12345\n", wantErr: "abcd\n" + notice(10, Stderr), dropErr: 2},
		{name: "dropped counted across writes, noticed once", writes: []struct {
			st   Stream
			text string
		}{{Stdout, "123456789\n"}, {Stdout, "x"}, {Stdout, "yz"}},
			wantOut: "123456789\n" + notice(10, Stdout), dropOut: 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(t.TempDir(), 10)
			for _, w := range c.writes {
				if _, _, err := s.Append(context.Background(), key(1, w.st), []byte(w.text)); err != nil {
					t.Fatal(err)
				}
			}
			for st, want := range map[Stream]string{Stdout: c.wantOut, Stderr: c.wantErr} {
				b, _ := os.ReadFile(s.Path(key(1, st)))
				if string(b) != want {
					t.Errorf("%s: %q, want %q", st, b, want)
				}
			}
			if d := s.Dropped(key(1, Stdout)); d != c.dropOut {
				t.Errorf("stdout dropped %d, want %d", d, c.dropOut)
			}
			if d := s.Dropped(key(1, Stderr)); d != c.dropErr {
				t.Errorf("stderr dropped %d, want %d", d, c.dropErr)
			}
			// Attempt 2 has a bound of its own.
			if _, d, _ := s.Append(context.Background(), key(2, Stdout), []byte("fresh\n")); d != 0 {
				t.Errorf("attempt 2 dropped %d", d)
			}
		})
	}
}

func notice(max int, st Stream) string {
	return "[taskactions: this attempt's logs reached --log-max-bytes (" + strconv.Itoa(max) + " bytes); the rest of its " + string(st) + " is dropped]\n"
}

// A follower is woken by each append and by its writers' close, and
// reads what was appended.
func TestFollowerWakesAndEnds(t *testing.T) {
	s := New(t.TempDir(), 0)
	w, err := s.Create(key(1, Stdout))
	if err != nil {
		t.Fatal(err)
	}
	werr, _ := s.Create(key(1, Stderr))
	f, err := s.Follow(context.Background(), key(1, Stdout))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64)
	if n, _ := f.ReadAt(buf, 0); n != 0 {
		t.Fatalf("read %d bytes of an empty log", n)
	}
	changed := f.Changed()
	if _, err := w.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	wait(t, changed, "the append")
	if n, _ := f.ReadAt(buf, 0); string(buf[:n]) != "hello\n" {
		t.Fatalf("read %q", buf[:n])
	}
	changed = f.Changed()
	w.Close()
	wait(t, changed, "the first close")
	if f.Ended() {
		t.Fatal("ended while stderr's writer is open")
	}
	changed = f.Changed()
	werr.Close()
	wait(t, changed, "the last close")
	if !f.Ended() {
		t.Fatal("not ended after every writer closed")
	}
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("no wake-up for %s", what)
	}
}

func TestBadKeys(t *testing.T) {
	s := New(t.TempDir(), 0)
	for _, k := range []Key{key(0, Stdout), key(1, "stdin")} {
		if _, _, err := s.Append(context.Background(), k, []byte("x")); err != ErrBadKey {
			t.Errorf("Append %v: %v, want ErrBadKey", k, err)
		}
		if _, err := s.Follow(context.Background(), k); err != ErrBadKey {
			t.Errorf("Follow %v: %v", k, err)
		}
	}
}
