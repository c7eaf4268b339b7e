package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"taskactions/internal/testenv"
)

// waitReady waits until the server at addr says it is ready.
func waitReady(t *testing.T, p *proc, addr string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for readyz(addr) != http.StatusOK {
		select {
		case <-p.done:
			t.Fatalf("the server exited: %v; log:\n%s", p.err, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready in time; log:\n%s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// adminToken reads the admin token of a data dir.
func adminToken(t *testing.T, dataDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// call makes an API request with the token and returns the status and body.
func call(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" || method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// enqueueBody is an enqueue request of a task type with a template.
func enqueueBody(project, run, action, template string) string {
	return fmt.Sprintf(`{"action":{"actionId":{"run":{"project":%q,"domain":"dev","name":%q},"name":%q},"task":{"taskTemplate":%s}}}`,
		project, run, action, template)
}

// openFDs counts the descriptors a process has open.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

var processGone = testenv.ProcessGone
