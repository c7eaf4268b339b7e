// Package journal is an ordered, bounded log of events with cursors, and
// the subscriptions that read it live. It is what makes a stream resumable:
// a subscriber that comes back with the cursor of the last event it saw gets
// exactly the events it missed, or is told it cannot (so it rebuilds from a
// snapshot), never a silent gap.
//
// Publishers append in cursor order from one goroutine at a time. Delivery
// to a subscriber never blocks the publisher: each subscription has a
// mailbox that coalesces pending events per key (latest wins) and, past its
// bound, marks the subscription lagged.
package journal

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Entry is one published event.
type Entry[V any] struct {
	Cursor uint64
	Key    string // what coalesces: the same key, the latest value wins
	Topics []string
	Value  V
	// Prev is the key's value before this event, as the source held it;
	// HasPrev is false for a key's first event. A filtered stream sends an
	// event whose value or previous value it keeps, so a client learns of
	// the change that takes an object out of its filter. A mailbox that
	// coalesces a key's events keeps the first one's Prev: the value its
	// reader last saw.
	Prev    V
	HasPrev bool

	at time.Time
	// reordered marks an event published out of cursor order (see Publish):
	// it is delivered live to everyone, whatever cursor they started from.
	reordered bool
	// superseded marks a mailbox slot whose key has a later event.
	superseded bool
	// frame is shared by every copy of the entry (see Framed).
	frame *frame
}

// frame memoizes what an event becomes on the wire.
type frame struct{ p atomic.Pointer[framed] }

type framed struct {
	tag string
	b   []byte
}

// Framed returns the event's wire form for a kind of stream (tag), built
// by build on first use and then shared: every subscriber of the event
// writes the same bytes, so they are made once, not once per stream.
func (e Entry[V]) Framed(tag string, build func() []byte) []byte {
	if e.frame == nil {
		return build()
	}
	if f := e.frame.p.Load(); f != nil && f.tag == tag {
		return f.b
	}
	b := build()
	e.frame.p.CompareAndSwap(nil, &framed{tag: tag, b: b})
	return b
}

// uncovered is the floor of a journal that can serve no resume.
const uncovered = math.MaxUint64

// Config bounds a journal.
type Config struct {
	// MaxEvents and MaxAge bound the replay buffer; the older of the two
	// limits wins.
	MaxEvents int
	MaxAge    time.Duration
	// MailboxSize is how many distinct keys a subscription may have pending
	// before it is marked lagged.
	MailboxSize int
	// Epoch, when set, prefixes cursors so that cursors of another process
	// (whose counters restarted) are recognised and refused.
	Epoch string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Journal is safe for concurrent use.
type Journal[V any] struct {
	cfg Config

	mu    sync.Mutex
	ring  []Entry[V] // oldest first
	floor uint64     // every event with Cursor > floor is in ring; uncovered before SetFloor
	last  uint64     // highest cursor published
	subs  map[string]map[*Subscription[V]]struct{}
}

// New returns an empty journal. Until SetFloor, it covers nothing.
func New[V any](cfg Config) *Journal[V] {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = 10000
	}
	if cfg.MailboxSize <= 0 {
		cfg.MailboxSize = 4096
	}
	return &Journal[V]{cfg: cfg, floor: uncovered, subs: map[string]map[*Subscription[V]]struct{}{}}
}

// SetFloor declares that every event after cursor will be published: call
// it once the source is known to deliver from there on (an informer's list
// resource version). It empties the buffer. The floor never goes below what
// was already published, or a resume from there would miss the dropped
// events.
func (j *Journal[V]) SetFloor(cursor uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	clear(j.ring)
	j.ring = j.ring[:0]
	cursor = max(cursor, j.last)
	j.floor, j.last = cursor, cursor
}

// Last returns the highest cursor published.
func (j *Journal[V]) Last() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.last
}

// Publish appends an event and delivers it to the subscribers of its
// topics. A cursor not above the last one means the source reordered or
// skipped events (a re-list). The event is still delivered live, under the
// last cursor, but the buffer is dropped and the floor raised above that
// cursor: every resume from before this point, including from the cursor
// the event itself carries, gets a snapshot instead of a wrong replay.
func (j *Journal[V]) Publish(e Entry[V]) {
	e.frame = &frame{}
	j.mu.Lock()
	defer j.mu.Unlock()
	if e.Cursor <= j.last {
		clear(j.ring)
		j.ring = j.ring[:0]
		if j.floor != uncovered {
			j.floor = j.last + 1
		}
		e.Cursor = j.last
		e.reordered = true
	} else {
		j.last = e.Cursor
		e.at = j.cfg.Now()
		j.ring = append(j.ring, e)
		j.trimLocked()
	}
	for _, t := range e.Topics {
		for s := range j.subs[t] {
			s.offer(e)
		}
	}
}

func (j *Journal[V]) trimLocked() {
	drop := 0
	if over := len(j.ring) - j.cfg.MaxEvents; over > 0 {
		drop = over
	}
	if j.cfg.MaxAge > 0 {
		cut := j.cfg.Now().Add(-j.cfg.MaxAge)
		for drop < len(j.ring) && j.ring[drop].at.Before(cut) {
			drop++
		}
	}
	if drop == 0 {
		return
	}
	j.floor = max(j.floor, j.ring[drop-1].Cursor)
	// Copy down rather than reslice so the backing array does not grow
	// without bound.
	n := copy(j.ring, j.ring[drop:])
	clear(j.ring[n:])
	j.ring = j.ring[:n]
}

// FormatCursor renders a cursor for the wire (an SSE id).
func (j *Journal[V]) FormatCursor(c uint64) string {
	s := strconv.FormatUint(c, 10)
	if j.cfg.Epoch != "" {
		return j.cfg.Epoch + "-" + s
	}
	return s
}

// ParseCursor reads a cursor from the wire. It fails for malformed ones and
// for those of another epoch.
func (j *Journal[V]) ParseCursor(s string) (uint64, bool) {
	if j.cfg.Epoch != "" {
		rest, ok := strings.CutPrefix(s, j.cfg.Epoch+"-")
		if !ok {
			return 0, false
		}
		s = rest
	}
	c, err := strconv.ParseUint(s, 10, 64)
	return c, err == nil
}

// Encoded memoizes the wire encoding of a published value, so that an
// event going to a thousand subscribers is encoded once. Embed it in the
// value type.
type Encoded struct {
	once sync.Once
	b    []byte
}

// Bytes returns the encoding, computing it with encode on first use.
func (e *Encoded) Bytes(encode func() []byte) []byte {
	e.once.Do(func() { e.b = encode() })
	return e.b
}
