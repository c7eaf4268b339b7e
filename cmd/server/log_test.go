package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"taskactions/test/testserver"
)

// The log at its default level is what a user acts on: a first start
// warns of nothing, successful reads (the dashboard's files, lists) write
// no line, a write writes one, and durations name their unit.
func TestDefaultLogHoldsWhatMatters(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := testserver.FreeAddr(t)
	p := startServer(t, "--listen", addr, "--data-dir", dataDir)
	waitReady(t, p, addr)
	token := adminToken(t, dataDir)
	base := "http://" + addr
	for _, path := range []string{"/", "/js/app.js", "/api/v1/projects/quiet/domains/dev/runs"} {
		if code, body := call(t, http.MethodGet, base+path, token, ""); code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
	}
	if code, body := call(t, http.MethodPost, base+"/api/v1/actions", token, enqueueBody("quiet", "r1", "a0", `{"type":"echo"}`)); code != http.StatusCreated {
		t.Fatalf("enqueue: %d %s", code, body)
	}
	if code, _ := call(t, http.MethodGet, base+"/api/v1/projects/quiet/domains/dev/runs/nosuch", token, ""); code != http.StatusNotFound {
		t.Fatalf("GET of a missing run: %d, want 404", code)
	}

	// The request line is written as the handler returns, which may be
	// just after the client has its answer: wait for the last one.
	logged := p.log()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logged, `/runs/nosuch"`) && time.Now().Before(deadline); logged = p.log() {
		time.Sleep(20 * time.Millisecond)
	}
	var requests []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logged), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("a log line that is not JSON: %q", line)
		}
		if lvl := entry["level"]; lvl == "warn" || lvl == "error" {
			t.Errorf("a first start logged at %s: %s", lvl, line)
		}
		if entry["message"] == "request" {
			requests = append(requests, entry)
		}
		for k := range entry {
			if strings.HasSuffix(k, "duration") || k == "took" || k == "startup" {
				t.Errorf("field %q names no unit: %s", k, line)
			}
		}
	}
	var got []string
	for _, r := range requests {
		got = append(got, r["method"].(string)+" "+r["path"].(string))
		if _, ok := r["durationMs"]; !ok {
			t.Errorf("request line without durationMs: %v", r)
		}
	}
	want := []string{"POST /api/v1/actions", "GET /api/v1/projects/quiet/domains/dev/runs/nosuch"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("request lines at info: %q, want %q (writes and refusals only)", got, want)
	}
}
