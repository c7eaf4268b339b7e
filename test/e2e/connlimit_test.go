package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"taskactions/internal/app"
)

// A health probe does not queue behind the connection bound: with every
// connection held by a keep-alive client idle after its request, and more
// clients connected that say nothing, /readyz is answered, and so is an
// API request, without waiting for the idle ones to time out (2 minutes
// for a keep-alive): the server closes the connections idle the longest
// to make room, keep-alives first.
func TestProbesDoNotWaitBehindIdleConnections(t *testing.T) {
	const maxConns = 20
	s, err := startServer(filepath.Join(t.TempDir(), "data"), func(c *app.Config) {
		c.MaxConnections = maxConns
		c.MaxStreams = 4
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	for range maxConns {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		resp, err := c.Get(s.URL() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		defer c.CloseIdleConnections()
	}
	addr := strings.TrimPrefix(s.URL(), "http://")
	for range 30 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}

	// Far less than the keep-alives' idle timeout; without room made, the
	// probe waits for that.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/readyz", nil)
	resp, err := probe.Do(req)
	if err != nil {
		t.Fatalf("/readyz with every connection idle: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: HTTP %d %s", resp.StatusCode, body)
	}
	r, err := s.api.ListProjectsWithResponse(ctx)
	if err != nil || r.StatusCode() != http.StatusOK {
		t.Errorf("an API request with every connection idle: %v %v", err, r)
	}
}
