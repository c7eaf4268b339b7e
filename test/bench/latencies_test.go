package bench

import (
	"bytes"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// latencies collects delivery latencies from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
	// changes holds, per change (keyed by its send time), its first and
	// last delivery: a delivery's latency is the change's trip to the
	// server's streams plus its place in the fan-out, and these two tell
	// the parts apart.
	changes map[int64][2]time.Duration
	got     atomic.Int64
	// failed counts readers whose stream did not open; firstErr says why.
	failed   atomic.Int64
	firstErr atomic.Value
}

func (l *latencies) fail(err error) {
	l.failed.Add(1)
	l.firstErr.CompareAndSwap(nil, err.Error())
}

func (l *latencies) add(d time.Duration) {
	l.got.Add(1)
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// addChange adds the delivery, now, of the change sent at sent.
func (l *latencies) addChange(sent time.Time) {
	d := time.Since(sent)
	l.got.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.d = append(l.d, d)
	if l.changes == nil {
		l.changes = map[int64][2]time.Duration{}
	}
	k := sent.UnixNano()
	v, seen := l.changes[k]
	if !seen || d < v[0] {
		v[0] = d
	}
	v[1] = max(v[1], d)
	l.changes[k] = v
}

// perChange returns, over the changes added with addChange, the latency
// of each change's first delivery and the time from its first delivery
// to its last.
func (l *latencies) perChange() (first, spread *latencies) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first, spread = &latencies{}, &latencies{}
	for _, v := range l.changes {
		first.add(v[0])
		spread.add(v[1] - v[0])
	}
	return first, spread
}

func (l *latencies) percentile(q float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.Sort(l.d)
	if len(l.d) == 0 {
		return 0
	}
	return float64(l.d[int(q*float64(len(l.d)-1))].Microseconds()) / 1000
}

// sentAt reads the send time the updater put in the status message
// ("t=<unix nanoseconds>"), from an event's JSON or an object's message.
func sentAt(data []byte) (time.Time, bool) {
	i := bytes.Index(data, []byte("t="))
	if i < 0 {
		return time.Time{}, false
	}
	j := i + 2
	for j < len(data) && data[j] >= '0' && data[j] <= '9' {
		j++
	}
	ns, err := strconv.ParseInt(string(data[i+2:j]), 10, 64)
	return time.Unix(0, ns), err == nil
}
