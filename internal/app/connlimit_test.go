package app

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
)

// serveLimited serves handler on loopback with at most max connections.
func serveLimited(t *testing.T, max int, handler http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimiter(ln, max)
	srv := &http.Server{Handler: handler, ConnState: l.track}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// get is the body of a GET, or the error (safe in any goroutine).
func get(c *http.Client, url string) string {
	resp, err := c.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A connection in use is never closed to make room: past the bound a new
// one waits until a request ends, and every request is answered.
func TestConnLimiterWaitsForBusyConnections(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	addr := serveLimited(t, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	}))
	slow := make(chan string, 2)
	for range 2 {
		go func() { slow <- get(&http.Client{Transport: &http.Transport{}}, "http://"+addr+"/slow") }()
	}
	<-started
	<-started
	third, dialed := make(chan string, 1), make(chan struct{})
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		close(dialed) // in the kernel's backlog: the server has no slot
		return c, err
	}}
	go func() { third <- get(&http.Client{Transport: tr}, "http://"+addr+"/") }()
	<-dialed
	close(release)
	for range 2 {
		if got := <-slow; got != "ok" {
			t.Errorf("a request in flight: %q, want ok (its connection was closed?)", got)
		}
	}
	if got := <-third; got != "ok" {
		t.Errorf("the request that waited: %q", got)
	}
}

// With every slot idle, a new connection is served at once: the server
// closes an idle keep-alive (whose client has its answer) before a
// connection that has not sent its request yet.
func TestConnLimiterClosesIdleKeepAlivesFirst(t *testing.T) {
	addr := serveLimited(t, 2, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	keep := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	if got := get(keep, "http://"+addr+"/"); got != "ok" {
		t.Fatal(got)
	}
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if got := get(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, "http://"+addr+"/"); got != "ok" {
		t.Fatalf("a new connection with every slot idle: %q", got)
	}
	// The silent connection was left open: its request is answered.
	if _, err := io.WriteString(silent, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(silent), nil)
	if err != nil {
		t.Fatalf("the connection that had sent nothing was closed first: %v", err)
	}
	resp.Body.Close()
}
