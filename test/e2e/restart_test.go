package e2e

import (
	"crypto/tls"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"taskactions/internal/app"
	"taskactions/pkg/client"
	"taskactions/test/testserver"
)

// A server of its own (TLS, so HTTP/2; a replay buffer of 5 events):
// streams work over HTTP/2, a resume the buffer passed gets a reset, a
// stop ends streams cleanly, and after a restart on the same data dir a
// client's resume gets reset and snapshot and ends in the right state.
func TestStreamsOverHTTP2AcrossRestart(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := testserver.SelfSignedCert(t)
	h2 := &http.Client{}
	start := func() *server {
		s, err := startServer(filepath.Join(dir, "data"), func(c *app.Config) {
			c.TLSCert, c.TLSKey = certFile, keyFile
			c.SSEReplayEvents = 5
		})
		if err != nil {
			t.Fatal(err)
		}
		h2.Transport = testserver.Authorized(s.token, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true})
		if s.api, err = client.NewClientWithResponses(s.URL()+"/api/v1", client.WithHTTPClient(h2)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s1 := start()
	run := newRun()
	enqueue(t, s1, run, "a0", "")

	st := state{}
	stream := openStream(t, h2, runStreamURL(s1, run), "")
	if stream.resp.ProtoMajor != 2 {
		t.Fatalf("stream over %s, want HTTP/2", stream.resp.Proto)
	}
	for _, ev := range stream.untilSynced(t) {
		st.apply(t, ev)
	}
	enqueue(t, s1, run, "c1", "a0")
	ev := stream.next(t, 10*time.Second)
	st.apply(t, ev)
	cursor := ev.ID
	stream.close()

	// More changes than the replay buffer holds: the resume is a reset.
	for a := int32(1); a <= 6; a++ {
		putStatus(t, s1, run, "c1", a, client.RUNNING)
	}
	resumed := openStream(t, h2, runStreamURL(s1, run), cursor)
	got := resumed.untilSynced(t)
	if eventTypes(got) != "reset action action synced" {
		t.Fatalf("resume past the buffer gave %q, want reset, a snapshot of 2, synced", eventTypes(got))
	}
	for _, ev := range got {
		st.apply(t, ev)
	}
	if st["c1"].Attempts != 6 {
		t.Fatalf("after the reset c1 is at attempt %d, want 6", st["c1"].Attempts)
	}
	cursor = got[len(got)-1].ID

	// Stop with the stream open: it ends, and the stop does not wait out
	// its grace period (Stop reports a timeout if it does).
	putStatus(t, s1, run, "a0", 1, client.RUNNING) // missed by the client
	if err := s1.Stop(); err != nil {
		t.Fatalf("stop with an open stream: %v", err)
	}
	for {
		if _, ok := <-resumed.events; !ok {
			break
		}
	}

	s2 := start()
	defer s2.Stop()
	putStatus(t, s2, run, "c1", 7, client.SUCCEEDED)
	after := openStream(t, h2, runStreamURL(s2, run), cursor)
	got = after.untilSynced(t)
	if got[0].Type != "reset" {
		t.Fatalf("resume after a restart gave %q, want a reset first", eventTypes(got))
	}
	for _, ev := range got {
		st.apply(t, ev)
	}
	if st["a0"].Phase != client.RUNNING || st["c1"].Phase != client.SUCCEEDED || len(st) != 2 {
		t.Fatalf("state after the restart: a0 %s, c1 %s, %d actions", st["a0"].Phase, st["c1"].Phase, len(st))
	}
}
