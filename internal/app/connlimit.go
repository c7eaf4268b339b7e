package app

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimiter bounds the open connections (each holds a descriptor), as
// netutil.LimitListener does, but a full house of idle connections does
// not keep a new one waiting: LimitListener stops accepting, so the next
// connection, a health probe's as well, waits in the kernel's backlog
// until one of them closes by itself (10 s for one that never sent a
// request, 2 minutes for an idle keep-alive). Here, when every slot is
// taken, the connection idle the longest is closed to make room: a
// keep-alive between requests (HTTP lets either side close it then; a
// client retries on a new one), or one accepted that has sent nothing for
// newConnGrace. Only when every connection is busy does Accept wait.
type connLimiter struct {
	net.Listener
	slots chan struct{} // one per open connection
	// changed wakes a waiting Accept: a connection went idle, or may now
	// be evicted.
	changed chan struct{}

	mu   sync.Mutex
	idle map[*limitedConn]idleSince
}

type idleSince struct {
	at    time.Time
	fresh bool // accepted, no request yet
}

// before orders the connections to close: keep-alives first (their
// clients have what they asked for), then the oldest.
func (s idleSince) before(o idleSince) bool {
	if s.fresh != o.fresh {
		return !s.fresh
	}
	return s.at.Before(o.at)
}

// newConnGrace is how long a new connection may take to send its first
// request before it can be closed to make room: under a burst of new
// clients the newest would otherwise close the ones before it.
const newConnGrace = time.Second

func newConnLimiter(ln net.Listener, max int) *connLimiter {
	return &connLimiter{Listener: ln, slots: make(chan struct{}, max), changed: make(chan struct{}, 1), idle: map[*limitedConn]idleSince{}}
}

// Accept takes a slot, making one if every slot is idle, then accepts.
func (l *connLimiter) Accept() (net.Conn, error) {
	if err := l.acquire(); err != nil {
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l}
	l.setIdle(lc, true, true)
	return lc, nil
}

func (l *connLimiter) acquire() error {
	for {
		select {
		case l.slots <- struct{}{}:
			return nil
		default:
		}
		wait := l.evict()
		if wait == 0 {
			continue // one was closed: its slot comes back
		}
		timer := time.NewTimer(wait)
		select {
		case l.slots <- struct{}{}:
			timer.Stop()
			return nil
		case <-l.changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// evict closes the connection idle the longest that may be closed, and
// returns 0; or, when none may, how long to wait before asking again.
func (l *connLimiter) evict() time.Duration {
	l.mu.Lock()
	now := time.Now()
	var victim *limitedConn
	var since idleSince
	wait := time.Minute
	for c, s := range l.idle {
		if s.fresh && now.Sub(s.at) < newConnGrace {
			wait = min(wait, newConnGrace-now.Sub(s.at))
			continue
		}
		if victim == nil || s.before(since) {
			victim, since = c, s
		}
	}
	if victim != nil {
		delete(l.idle, victim)
	}
	l.mu.Unlock()
	if victim == nil {
		return wait
	}
	_ = victim.Close()
	return 0
}

func (l *connLimiter) setIdle(c *limitedConn, idle, fresh bool) {
	l.mu.Lock()
	if idle && !c.closed {
		l.idle[c] = idleSince{at: time.Now(), fresh: fresh}
	} else {
		delete(l.idle, c)
	}
	l.mu.Unlock()
	if idle {
		select {
		case l.changed <- struct{}{}:
		default:
		}
	}
}

// track is the http.Server's ConnState hook: it follows which connections
// are idle.
func (l *connLimiter) track(c net.Conn, state http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	switch state {
	case http.StateIdle:
		l.setIdle(lc, true, false)
	case http.StateActive, http.StateHijacked, http.StateClosed:
		l.setIdle(lc, false, false)
	}
}

// limitedConn gives its slot back when it closes.
type limitedConn struct {
	net.Conn
	l      *connLimiter
	once   sync.Once
	closed bool // under l.mu
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.closed = true
		delete(c.l.idle, c)
		c.l.mu.Unlock()
		<-c.l.slots
	})
	return err
}
