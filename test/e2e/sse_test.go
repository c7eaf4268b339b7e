package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

func TestStreamSnapshotSyncedLive(t *testing.T) {
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	enqueue(t, srv, run, "c1", "a0")
	enqueue(t, srv, run, "g1", "c1") // a grandchild: not in a0's stream

	s := openStream(t, srv.http, actionStreamURL(srv, run, "a0"), "")
	h := s.resp.Header
	if h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache" || h.Get("X-Accel-Buffering") != "no" {
		t.Errorf("stream headers %v", h)
	}
	first := s.untilSynced(t)
	st := state{}
	for _, ev := range first {
		if !ev.HasID {
			t.Errorf("%s event without an id", ev.Type)
		}
		st.apply(t, ev)
	}
	if got := eventTypes(first); got != "action action synced" {
		t.Fatalf("fresh connect gave %q, want the snapshot of a0 and c1, then synced", got)
	}
	if _, ok := st["g1"]; ok {
		t.Errorf("the grandchild is in the parent's stream")
	}
	synced := cursorOf(t, first[len(first)-1].ID)

	// Live: each child's changes in order, ids rising.
	const children, changes = 5, 4
	for i := range children {
		enqueue(t, srv, run, fmt.Sprintf("k%d", i), "a0")
	}
	for a := int32(1); a <= changes; a++ {
		for i := range children {
			putStatus(t, srv, run, fmt.Sprintf("k%d", i), a, client.RUNNING)
		}
	}
	last := synced
	seen := map[string]int64{}
	for n := 0; n < children*(changes+1); n++ {
		ev := s.next(t, 10*time.Second)
		if ev.Type != "action" {
			t.Fatalf("live event %q", ev.Type)
		}
		c := cursorOf(t, ev.ID)
		if c <= last {
			t.Fatalf("event id %d after %d", c, last)
		}
		last = c
		st.apply(t, ev)
		a := st[nameOf(t, ev)]
		if a.Attempts < seen[a.ActionId.Name] {
			t.Fatalf("%s went back from attempt %d to %d", a.ActionId.Name, seen[a.ActionId.Name], a.Attempts)
		}
		seen[a.ActionId.Name] = a.Attempts
	}
	for i := range children {
		if a := st[fmt.Sprintf("k%d", i)]; a.Attempts != changes || a.Phase != client.RUNNING {
			t.Errorf("k%d ended at attempt %d %s", i, a.Attempts, a.Phase)
		}
	}
}

func TestStreamResumeIsExact(t *testing.T) {
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	s := openStream(t, srv.http, runStreamURL(srv, run), "")
	s.untilSynced(t)
	enqueue(t, srv, run, "c1", "a0")
	ev := s.next(t, 10*time.Second)
	cursor := ev.ID
	s.close()

	// Missed while away: c2 appears, c1 runs, a0 runs.
	enqueue(t, srv, run, "c2", "a0")
	putStatus(t, srv, run, "c1", 1, client.RUNNING)
	putStatus(t, srv, run, "a0", 1, client.RUNNING)

	r := openStream(t, srv.http, runStreamURL(srv, run), cursor)
	got := r.untilSynced(t)
	var names []string
	for _, ev := range got[:len(got)-1] {
		names = append(names, ev.Type+":"+nameOf(t, ev))
	}
	if want := "[action:c2 action:c1 action:a0]"; fmt.Sprint(names) != want {
		t.Fatalf("resume replayed %v, want exactly the missed %s", names, want)
	}

	// The same through ?lastEventId= (a first connect of a page).
	q := openStream(t, srv.http, runStreamURL(srv, run)+"?lastEventId="+cursor, "")
	if got := eventTypes(q.untilSynced(t)); got != "action action action synced" {
		t.Fatalf("resume by query parameter gave %q", got)
	}

	// A cursor the server does not cover: reset, snapshot, synced.
	old := openStream(t, srv.http, runStreamURL(srv, run), "1")
	if got := eventTypes(old.untilSynced(t)); got != "reset action action action synced" {
		t.Fatalf("uncovered cursor gave %q, want reset then a snapshot of 3", got)
	}
}

// Every run here has a root a0 and a child c1: a stream of run 1's a0 must
// not see run 2.
func TestStreamNoCrossRunLeak(t *testing.T) {
	run1 := newRun()
	run2 := client.RunIdentifier{Project: run1.Project, Domain: run1.Domain, Name: run1.Name + "b"}
	for _, r := range []client.RunIdentifier{run1, run2} {
		enqueue(t, srv, r, "a0", "")
	}
	s := openStream(t, srv.http, actionStreamURL(srv, run1, "a0"), "")
	s.untilSynced(t)
	enqueue(t, srv, run2, "c1", "a0")
	putStatus(t, srv, run2, "a0", 1, client.RUNNING)
	enqueue(t, srv, run1, "c1", "a0") // the only event this stream should get
	ev := s.next(t, 10*time.Second)
	var a client.ActionEvent
	mustJSON(t, ev.Data, &a)
	if a.ActionId.Run != run1 || a.ActionId.Name != "c1" {
		t.Fatalf("stream of %s/a0 got %+v", run1.Name, a.ActionId)
	}
}

func TestStreamHeartbeat(t *testing.T) {
	run := newRun()
	s := openStream(t, srv.http, runStreamURL(srv, run), "")
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-s.events:
			if ev.Comment == "ping" {
				return
			}
		case <-deadline:
			t.Fatal("no ping comment (the test server pings every 500ms)")
		}
	}
}

// A reader that stops reading delays nobody; when it reads again it ends
// on the right state (coalesced, or reset and rebuilt), never with a gap.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestStreamSlowReader(t *testing.T) {
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	// The slow reader's socket buffer is tiny, so the server's writes to it
	// block soon.
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		_ = c.Control(func(fd uintptr) {
			// Before connect, so the window the server sees is small.
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024)
		})
		return err
	}}
	slowClient := &http.Client{Transport: testserver.Authorized(srv.token, &http.Transport{DialContext: dialer.DialContext})}
	slowResp, err := slowClient.Get(runStreamURL(srv, run))
	if err != nil {
		t.Fatal(err)
	}
	defer slowResp.Body.Close()
	fast := openStream(t, srv.http, runStreamURL(srv, run), "")
	st := state{}
	for _, ev := range fast.untilSynced(t) {
		st.apply(t, ev)
	}

	const n, attempts = 40, 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("c%d", i)
			enqueue(t, srv, run, name, "a0")
			// Long messages (kept in the phase history) make the events big,
			// so the slow reader's connection fills up quickly.
			msg := strings.Repeat("m", 4000)
			for a := int32(1); a <= attempts; a++ {
				resp, err := srv.api.PutActionStatusWithResponse(context.Background(), run.Project, run.Domain, run.Name, name,
					client.StatusRequest{Attempt: a, Status: client.ActionStatus{Phase: client.RUNNING, Message: &msg}})
				if err != nil || resp.StatusCode() != http.StatusOK {
					t.Errorf("put status: %v %v", err, resp.Status())
					return
				}
			}
		}()
	}
	wg.Wait()
	stall := time.After(10 * time.Second)
	for len(st) < n+1 || !allAtAttempt(st, n, attempts) {
		select {
		case ev, ok := <-fast.events:
			if !ok {
				t.Fatalf("fast stream ended: %v", <-fast.errs)
			}
			st.apply(t, ev)
		case <-stall:
			for k, v := range st {
				t.Logf("%s attempt %d %s", k, v.Attempts, v.Phase)
			}
			t.Fatalf("fast stream stalled with %d actions", len(st))
		}
	}

	// Now the slow one reads. The server may have dropped it (its writes
	// timed out): like EventSource, it reconnects with its last event id.
	slow := client.NewEventReader(slowResp.Body)
	slowState := state{}
	slowEvents, resets, reconnects := 0, 0, 0
	for len(slowState) < n+1 || !allAtAttempt(slowState, n, attempts) {
		ev, err := slow.Next()
		if err != nil {
			reconnects++
			// openStream reads in the background; read its channel here.
			r := openStream(t, srv.http, runStreamURL(srv, run), slow.LastEventID())
			for len(slowState) < n+1 || !allAtAttempt(slowState, n, attempts) {
				ev := r.next(t, 10*time.Second)
				slowState.apply(t, ev)
				if ev.Type == "reset" {
					resets++
				}
			}
			break
		}
		slowState.apply(t, ev)
		switch ev.Type {
		case "action":
			slowEvents++
		case "reset":
			resets++
		}
	}
	t.Logf("slow reader: %d action events for %d updates, %d resets, %d reconnects", slowEvents, n*(attempts+1), resets, reconnects)
	if slowEvents >= n*(attempts+1) && reconnects == 0 {
		t.Errorf("the slow reader was never slowed down; the test did not test anything")
	}
}

func allAtAttempt(st state, n int, attempt int64) bool {
	for i := range n {
		if st[fmt.Sprintf("c%d", i)].Attempts != attempt {
			return false
		}
	}
	return true
}

// Open and drop 1,000 streams: no goroutine, subscription or memory stays.
func TestStreamConnectDisconnectLeavesNothing(t *testing.T) {
	if srv.app == nil {
		t.Fatal("needs the server in this process")
	}
	run := newRun()
	enqueue(t, srv, run, "a0", "")
	mgr := srv.app.Manager()
	settle := func() (int, uint64) {
		for range 3 {
			runtime.GC()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), ms.HeapAlloc
	}
	subsBefore := mgr.Cache().Journal().Subscribers()
	goBefore, heapBefore := settle()
	c := &http.Client{Transport: testserver.Authorized(srv.token, &http.Transport{MaxIdleConnsPerHost: 1})}
	for range 1000 {
		resp, err := c.Get(actionStreamURL(srv, run, "a0"))
		if err != nil {
			t.Fatal(err)
		}
		for r := client.NewEventReader(resp.Body); ; {
			ev, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == "synced" {
				break
			}
		}
		resp.Body.Close()
	}
	c.CloseIdleConnections()
	eventually(t, 10*time.Second, "streams to close", func() bool { return mgr.Cache().Journal().Subscribers() == subsBefore })
	var goAfter int
	var heapAfter uint64
	eventually(t, 10*time.Second, "goroutines to end", func() bool {
		goAfter, heapAfter = settle()
		return goAfter <= goBefore+5
	})
	if heapAfter > heapBefore+8<<20 {
		t.Errorf("heap grew from %d to %d bytes over 1,000 streams", heapBefore, heapAfter)
	}
	t.Logf("goroutines %d -> %d, heap %d KB -> %d KB", goBefore, goAfter, heapBefore>>10, heapAfter>>10)
}
