package journal

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

// fakeClock lets MaxAge trimming be tested without sleeping.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// ev builds an event whose value names its key and cursor, so a test can
// tell which version of a coalesced key it got.
func ev(cursor uint64, key string, topics ...string) Entry[string] {
	if len(topics) == 0 {
		topics = []string{"t"}
	}
	return Entry[string]{Cursor: cursor, Key: key, Topics: topics, Value: fmt.Sprintf("%s@%d", key, cursor)}
}

func publishRange(j *Journal[string], from, to uint64) {
	for c := from; c <= to; c++ {
		j.Publish(ev(c, fmt.Sprint("k", c)))
	}
}

func cursors(es []Entry[string]) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Cursor
	}
	return out
}

func values(es []Entry[string]) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Value
	}
	return out
}

// drain fails the test on lag, which none of its callers expect.
func drain(t *testing.T, s *Subscription[string]) []Entry[string] {
	t.Helper()
	out, lagged := s.Drain(nil)
	if lagged {
		t.Fatal("unexpected lag")
	}
	return out
}

// subscribed returns a journal covering everything from 0 and a live
// subscription to its topic "t".
func subscribed(t *testing.T, cfg Config) (*Journal[string], *Subscription[string]) {
	j := New[string](cfg)
	j.SetFloor(0)
	s, _ := j.Subscribe("t", nil, func() uint64 { return 0 })
	t.Cleanup(s.Close)
	return j, s
}

// signalled consumes the Ready token if there is one.
func signalled(s *Subscription[string]) bool {
	select {
	case <-s.Ready():
		return true
	default:
		return false
	}
}

// snap returns a snapshot callback reporting cursor c and counting calls.
func snap(c uint64, calls *int) func() uint64 {
	return func() uint64 { *calls++; return c }
}

func TestSubscribeSnapshot(t *testing.T) {
	tests := []struct {
		name       string
		snapshot   uint64 // what the source cache reflects
		wantCursor uint64
		live       []uint64 // published after Subscribe
		wantLive   []uint64
	}{
		{"cache behind journal", 1, 3, []uint64{4, 5}, []uint64{4, 5}},
		{"cache equals journal", 3, 3, []uint64{4}, []uint64{4}},
		// The snapshot already reflects 4 and 5, so only 6 is news.
		{"cache ahead of journal", 5, 5, []uint64{4, 5, 6}, []uint64{6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := New[string](Config{})
			j.SetFloor(0)
			publishRange(j, 1, 3)
			var calls int
			s, st := j.Subscribe("t", nil, snap(tt.snapshot, &calls))
			defer s.Close()
			if calls != 1 || st.Resumed || len(st.Replay) != 0 || st.Cursor != tt.wantCursor {
				t.Fatalf("calls=%d start=%+v, want 1 call, not resumed, cursor %d", calls, st, tt.wantCursor)
			}
			for _, c := range tt.live {
				j.Publish(ev(c, fmt.Sprint("k", c)))
			}
			if got := cursors(drain(t, s)); !slices.Equal(got, tt.wantLive) {
				t.Errorf("live = %v, want %v", got, tt.wantLive)
			}
		})
	}
}

func TestSubscribeResume(t *testing.T) {
	tests := []struct {
		name        string
		topic       string
		after       *uint64
		wantResumed bool
		wantReplay  []string
		wantCursor  uint64
	}{
		{"at floor", "t", new(uint64(10)), true, []string{"a@11", "c@13", "d@14"}, 14},
		{"mid buffer", "t", new(uint64(12)), true, []string{"c@13", "d@14"}, 14},
		{"at last", "t", new(uint64(14)), true, nil, 14},
		{"other topic", "u", new(uint64(11)), true, []string{"b@12", "c@13"}, 14},
		// Nothing of u after 13, but the cursor still moves to last so that
		// live filtering starts there.
		{"nothing to replay", "u", new(uint64(13)), true, nil, 14},
		{"below floor", "t", new(uint64(9)), false, nil, 14},
		{"above last", "t", new(uint64(15)), false, nil, 14},
		{"no cursor", "t", nil, false, nil, 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := New[string](Config{})
			j.SetFloor(10)
			j.Publish(ev(11, "a", "t"))
			j.Publish(ev(12, "b", "u"))
			j.Publish(ev(13, "c", "t", "u"))
			j.Publish(ev(14, "d", "t"))
			var calls int
			s, st := j.Subscribe(tt.topic, tt.after, snap(0, &calls))
			defer s.Close()
			if st.Resumed != tt.wantResumed || st.Cursor != tt.wantCursor {
				t.Errorf("resumed=%v cursor=%d, want %v %d", st.Resumed, st.Cursor, tt.wantResumed, tt.wantCursor)
			}
			if (calls == 0) != tt.wantResumed || calls > 1 {
				t.Errorf("snapshot calls = %d with resumed=%v", calls, tt.wantResumed)
			}
			if got := values(st.Replay); !slices.Equal(got, tt.wantReplay) {
				t.Errorf("replay = %v, want %v", got, tt.wantReplay)
			}
		})
	}
}

// Every way the buffer can stop covering a cursor must turn a resume from
// it into a snapshot, while the first cursor still covered keeps resuming.
func TestResumeOutsideBuffer(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		setup      func(j *Journal[string], clk *fakeClock)
		lost, kept uint64
		keptReplay []uint64
	}{
		{"SetFloor", Config{}, func(j *Journal[string], _ *fakeClock) {
			publishRange(j, 1, 3)
			j.SetFloor(5)
		}, 3, 5, nil},
		{"MaxEvents", Config{MaxEvents: 3}, func(j *Journal[string], _ *fakeClock) {
			publishRange(j, 1, 5)
		}, 1, 2, []uint64{3, 4, 5}},
		{"MaxAge", Config{MaxAge: time.Minute}, func(j *Journal[string], clk *fakeClock) {
			publishRange(j, 1, 2)
			clk.Advance(2 * time.Minute)
			publishRange(j, 3, 3) // trimming happens on publish
		}, 1, 2, []uint64{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(1_000_000, 0)}
			tt.cfg.Now = clk.Now
			j := New[string](tt.cfg)
			j.SetFloor(0)
			tt.setup(j, clk)
			var calls int
			lost, st := j.Subscribe("t", new(tt.lost), snap(0, &calls))
			defer lost.Close()
			if st.Resumed || calls != 1 {
				t.Errorf("after %d: resumed=%v snapshot calls=%d, want a snapshot", tt.lost, st.Resumed, calls)
			}
			kept, st := j.Subscribe("t", new(tt.kept), snap(0, &calls))
			defer kept.Close()
			if !st.Resumed || calls != 1 {
				t.Errorf("after %d: resumed=%v snapshot calls=%d, want a resume", tt.kept, st.Resumed, calls-1)
			}
			if got := cursors(st.Replay); !slices.Equal(got, tt.keptReplay) {
				t.Errorf("after %d: replay = %v, want %v", tt.kept, got, tt.keptReplay)
			}
		})
	}
}

func TestPublishReordered(t *testing.T) {
	j := New[string](Config{})
	j.SetFloor(0)
	publishRange(j, 1, 5)
	var calls int
	behind, _ := j.Subscribe("t", nil, snap(0, &calls))
	defer behind.Close()
	// Its start cursor (10) is above the reordered event, which must still
	// reach it: the source went back and its snapshot may now be wrong.
	ahead, _ := j.Subscribe("t", nil, snap(10, &calls))
	defer ahead.Close()

	j.Publish(ev(3, "x"))

	for name, s := range map[string]*Subscription[string]{"behind": behind, "ahead": ahead} {
		got := drain(t, s)
		if len(got) != 1 || got[0].Value != "x@3" {
			t.Errorf("%s: live = %v, want the reordered x@3", name, values(got))
		}
	}
	late, st := j.Subscribe("t", new(uint64(4)), snap(0, &calls))
	defer late.Close()
	if st.Resumed {
		t.Errorf("resume from 4 after the reorder: resumed with replay %v, want a snapshot", cursors(st.Replay))
	}
}

// The journal promises never to resume a client into a silent gap. Each
// case leaves a client whose cursor the journal claims to cover although
// an event after that cursor is not in its replay.
func TestNoSilentGap(t *testing.T) {
	tests := []struct {
		name  string
		setup func(j *Journal[string])
		after uint64 // the last cursor the disconnected client saw
	}{
		// The client saw 3 and left; x is then published out of order and
		// only delivered live, so a resume at 3 must not come back empty.
		{"reorder at last", func(j *Journal[string]) {
			j.SetFloor(0)
			publishRange(j, 1, 3)
			j.Publish(ev(2, "x"))
		}, 3},
		// SetFloor empties the buffer, so 4 and 5 are no longer replayable.
		{"SetFloor below last", func(j *Journal[string]) {
			j.SetFloor(0)
			publishRange(j, 1, 5)
			j.SetFloor(3)
		}, 3},
		// "Until SetFloor, it covers nothing": the client's 3 may come from
		// before a restart, and 4 may have happened while we were down.
		{"publish before SetFloor", func(j *Journal[string]) {
			j.Publish(ev(5, "k5"))
		}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := New[string](Config{})
			tt.setup(j)
			s, st := j.Subscribe("t", new(tt.after), func() uint64 { return 0 })
			defer s.Close()
			if st.Resumed {
				t.Errorf("resume after %d: Resumed with replay %v and cursor %d; want a snapshot (or a replay of what was missed)",
					tt.after, values(st.Replay), st.Cursor)
			}
		})
	}
}

func TestMailboxCoalescing(t *testing.T) {
	tests := []struct {
		name    string
		size    int
		keys    string   // one event per byte, cursors 1, 2, ...
		wantOut []string // in strictly increasing cursor order
	}{
		{"distinct", 0, "ab", []string{"a@1", "b@2"}},
		{"same key", 0, "aaa", []string{"a@3"}},
		{"moves behind later events", 0, "abacb", []string{"a@3", "c@4", "b@5"}},
		// Enough superseded slots to make the mailbox compact itself.
		{"compaction", 2, "abababababab", []string{"a@11", "b@12"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, s := subscribed(t, Config{MailboxSize: tt.size})
			for i, k := range tt.keys {
				j.Publish(ev(uint64(i+1), string(k)))
			}
			got := drain(t, s)
			if !slices.Equal(values(got), tt.wantOut) {
				t.Errorf("drained %v, want %v", values(got), tt.wantOut)
			}
			if again := drain(t, s); len(again) != 0 {
				t.Errorf("second drain = %v, want empty", values(again))
			}
		})
	}
}

// The mailbox uses Key "" to mark superseded slots, so an event published
// with an empty key (nothing says keys must be set) would be silently lost.
func TestEmptyKeyDelivered(t *testing.T) {
	j, s := subscribed(t, Config{})
	j.Publish(ev(1, ""))
	if got := drain(t, s); len(got) != 1 {
		t.Errorf("drained %v, want the one event with an empty key", values(got))
	}
}

func TestMailboxLag(t *testing.T) {
	tests := []struct {
		name       string
		keys       string // one event per byte; '|' drains in between
		wantLagged bool
	}{
		{"at the bound", "ab", false},
		{"repeats are not distinct", "ababa", false},
		{"over the bound", "abc", true},
		{"drain frees the mailbox", "ab|c", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, s := subscribed(t, Config{MailboxSize: 2})
			for i, k := range tt.keys {
				if k == '|' {
					drain(t, s)
					continue
				}
				j.Publish(ev(uint64(i+1), string(k)))
			}
			if _, lagged := s.Drain(nil); lagged != tt.wantLagged {
				t.Fatalf("lagged = %v, want %v", lagged, tt.wantLagged)
			} else if !lagged {
				return
			}
			// A lagged subscription is dead: later events neither wake the
			// reader nor show up in the caller's buffer.
			signalled(s)
			j.Publish(ev(100, "z"))
			if signalled(s) {
				t.Error("ready after lag")
			}
			buf := []Entry[string]{ev(99, "kept")}
			if out, lagged := s.Drain(buf); !lagged || !slices.Equal(values(out), []string{"kept@99"}) {
				t.Errorf("drain after lag = %v, %v; want the caller's buffer, true", values(out), lagged)
			}
		})
	}
}

func TestReady(t *testing.T) {
	j, s := subscribed(t, Config{})
	if signalled(s) {
		t.Fatal("ready before any publish")
	}
	j.Publish(ev(1, "a", "other"))
	if signalled(s) {
		t.Error("ready after a publish to another topic")
	}
	j.Publish(ev(2, "b"))
	if !signalled(s) {
		t.Error("not ready after a publish to the topic")
	}
}

func TestClose(t *testing.T) {
	j := New[string](Config{})
	j.SetFloor(0)
	closed, _ := j.Subscribe("t", nil, func() uint64 { return 0 })
	open, _ := j.Subscribe("t", nil, func() uint64 { return 0 })
	defer open.Close()
	if n := j.Subscribers(); n != 2 {
		t.Fatalf("Subscribers() = %d, want 2", n)
	}
	closed.Close()
	closed.Close() // must not panic or unregister anything else
	if n := j.Subscribers(); n != 1 {
		t.Fatalf("Subscribers() after Close = %d, want 1", n)
	}
	j.Publish(ev(1, "a"))
	if got := drain(t, closed); len(got) != 0 {
		t.Errorf("closed subscription got %v", values(got))
	}
	if got := drain(t, open); len(got) != 1 {
		t.Errorf("open subscription got %v, want one event", values(got))
	}
}

func TestCursorFormat(t *testing.T) {
	for _, epoch := range []string{"", "e7"} {
		j := New[string](Config{Epoch: epoch})
		for _, c := range []uint64{0, 42, math.MaxUint64} {
			s := j.FormatCursor(c)
			if got, ok := j.ParseCursor(s); !ok || got != c {
				t.Errorf("epoch %q: ParseCursor(%q) = %d, %v; want %d", epoch, s, got, ok, c)
			}
		}
	}
	bad := []struct{ epoch, s string }{
		{"", ""}, {"", "x"}, {"", "-1"}, {"", "1.5"}, {"", "e7-42"},
		{"e7", "42"}, {"e7", "e8-42"}, {"e7", "e7-"}, {"e7", "e7-x"}, {"e7", "e7_42"},
	}
	for _, b := range bad {
		j := New[string](Config{Epoch: b.epoch})
		if c, ok := j.ParseCursor(b.s); ok {
			t.Errorf("epoch %q: ParseCursor(%q) = %d, ok; want failure", b.epoch, b.s, c)
		}
	}
}

func TestConcurrentPublishDrain(t *testing.T) {
	const events, keys = 10_000, 50
	j := New[int](Config{})
	j.SetFloor(0)
	s, _ := j.Subscribe("t", nil, func() uint64 { return 0 })
	defer s.Close()

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range events {
			c := uint64(i + 1)
			j.Publish(Entry[int]{Cursor: c, Key: fmt.Sprint(i % keys), Topics: []string{"t"}, Value: int(c)})
		}
	}()
	defer func() { <-done }() // let the publisher finish if the reader fails

	lastCursor := map[string]uint64{}
	lastValue := map[string]int{}
	consume := func() {
		got, lagged := s.Drain(nil)
		if lagged {
			t.Fatal("lagged") // keys < MailboxSize, so it never should
		}
		for _, e := range got {
			if e.Cursor <= lastCursor[e.Key] {
				t.Fatalf("key %s: cursor %d after %d", e.Key, e.Cursor, lastCursor[e.Key])
			}
			lastCursor[e.Key], lastValue[e.Key] = e.Cursor, e.Value
		}
	}
	for reading := true; reading; {
		select {
		case <-s.Ready():
			consume()
		case <-done:
			consume() // the publisher has finished: this drain sees the rest
			reading = false
		}
	}

	if len(lastValue) != keys {
		t.Fatalf("saw %d keys, want %d", len(lastValue), keys)
	}
	for k := range keys {
		want := events - keys + k + 1 // cursor of the last event of key k
		if got := lastValue[fmt.Sprint(k)]; got != want {
			t.Errorf("key %d: final value %d, want %d", k, got, want)
		}
	}
}

// A mailbox that coalesces a key's events keeps, as the one it delivers's
// Prev, the value its reader last saw: none for a key it never delivered,
// else the value before the first of the coalesced events.
func TestMailboxKeepsTheFirstPrev(t *testing.T) {
	j, s := subscribed(t, Config{})
	prev := ""
	publish := func(c uint64) {
		e := ev(c, "a")
		e.Prev, e.HasPrev = prev, prev != ""
		prev = e.Value
		j.Publish(e)
	}
	publish(1)
	publish(2)
	publish(3)
	got := drain(t, s)
	if len(got) != 1 || got[0].Value != "a@3" || got[0].HasPrev {
		t.Fatalf("first drain %+v: want a@3 with no Prev (the reader never saw a)", got)
	}
	publish(4)
	publish(5)
	got = drain(t, s)
	if len(got) != 1 || got[0].Value != "a@5" || !got[0].HasPrev || got[0].Prev != "a@3" {
		t.Fatalf("second drain %+v: want a@5 with Prev a@3, what the reader saw", got)
	}
}
