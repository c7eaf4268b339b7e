package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"taskactions/test/testserver"
	"testing"
	"time"
)

// Under a low descriptor limit, more streams than the server allows get
// 503 with Retry-After, and it keeps serving and writing: nothing takes
// the descriptors etcd needs (it exits when a WAL file cannot be opened).
// The soft limit is raised to the hard one at start.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestStreamsPastTheDescriptorLimit(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	addr := testserver.FreeAddr(t)
	// Soft 256, hard 600: the server raises it to 600, which leaves 111
	// connections and 94 streams (see fdBudget).
	p := startCommand(t, exec.Command("prlimit", "--nofile=256:600", "--", os.Args[0], "--listen", addr, "--data-dir", dataDir))
	waitReady(t, p, addr)
	pid := p.cmd.Process.Pid
	if limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid)); !strings.Contains(string(limits), "Max open files            600                  600") {
		t.Errorf("the soft limit was not raised to the hard one:\n%s", limits)
	}
	token := adminToken(t, dataDir)
	base := "http://" + addr + "/api/v1"
	if code, body := call(t, "POST", base+"/actions", token, enqueueBody("fd", "r1", "a0", `{"type":"echo"}`)); code != http.StatusCreated {
		t.Fatalf("enqueue: %d %s", code, body)
	}
	idle := openFDs(t, pid)

	const tries = 700
	streamURL := base + "/projects/fd/domains/dev/runs/r1/events"
	var open []*http.Response
	refused := 0
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for range tries {
		req, _ := http.NewRequest(http.MethodGet, streamURL, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		// One connection per stream, as browsers' tabs have.
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("stream %d: %v (after %d open, %d refused)", len(open)+refused, err, len(open), refused)
		}
		if resp.StatusCode == http.StatusOK {
			open = append(open, resp)
			continue
		}
		refused++
		var problem struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		}
		err = json.NewDecoder(resp.Body).Decode(&problem)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("Content-Type") != "application/problem+json" || err != nil || problem.Status != 503 {
			t.Fatalf("refused stream: %s Retry-After %q %s %+v", resp.Status, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), problem)
		}
	}
	t.Logf("descriptors: %d at idle, %d with %d streams open: %.2f per stream", idle, openFDs(t, pid), len(open),
		float64(openFDs(t, pid)-idle)/float64(len(open)))
	if len(open) != 94 || refused != tries-94 {
		t.Errorf("%d streams open and %d refused, want 94 and %d", len(open), refused, tries-94)
	}

	// Alive, ready, and etcd still writes (new WAL entries, new objects).
	select {
	case <-p.done:
		t.Fatalf("the server exited: %v\n%s", p.err, p.stderr)
	default:
	}
	if readyz(addr) != http.StatusOK {
		t.Error("not ready with the streams open")
	}
	for i := range 50 {
		if code, body := call(t, "POST", base+"/actions", token, enqueueBody("fd", "r1", fmt.Sprintf("c%d", i), `{"type":"echo"}`)); code != http.StatusCreated {
			t.Fatalf("enqueue %d with the streams open: %d %s", i, code, body)
		}
	}
	// Streams closed, streams open again.
	for _, r := range open {
		r.Body.Close()
	}
	open = nil
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, streamURL, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err == nil && resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		if err == nil {
			resp.Body.Close()
		}
		if time.Now().After(deadline) {
			t.Fatal("no stream opens after the others closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
