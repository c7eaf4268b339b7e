// Package fuzz sends arbitrary request bodies to a real server. The server
// runs as a process of its own (bin/taskactions, from make build): the fuzz
// engine instruments only this small package, and the server's own
// goroutines do not muddle its coverage.
package fuzz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The fuzz targets send arbitrary bodies to the real server: whatever they
// are, the answer is never a 5xx, and an error is always a problem
// document. make test runs each briefly; run longer by hand with
//
//	go test -run '^$' -fuzz FuzzEnqueueBody -fuzztime 1000000x ./test/fuzz

func FuzzEnqueueBody(f *testing.F) {
	for _, seed := range []string{
		`{"action":{"actionId":{"run":{"project":"fz","domain":"dev","name":"r1"},"name":"a0"},"task":{"taskTemplate":{"type":"external"}}}}`,
		`{"action":{"actionId":{"run":{"project":"fz","domain":"dev","name":"r1"},"name":"c1"},"parentActionName":"a0","task":{"taskTemplate":{"type":"external","metadata":{"retries":2,"timeout":"1m"}},"cacheKey":"k"}},"runSpec":{"labels":{"a":"b"},"envs":{"X":"1"}}}`,
		`{"action":{"actionId":{"run":{"project":"fz","domain":"dev","name":"r1"},"name":"a0"},"task":{"taskTemplate":{"type":"x"}}},"runSpec":{"labels":{"bad key":"v"}}}`,
		`{}`, `[]`, `null`, `{"action":`, "\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkNo5xx(t, http.MethodPost, "/api/v1/actions", "application/json", body)
	})
}

// FuzzStageYAMLBody sends arbitrary YAML as a Stage: anchors, merges and
// YAML 1.1's scalars included, whatever it expands to.
func FuzzStageYAMLBody(f *testing.F) {
	stage := "apiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata:\n  name: s1\n  annotations: {a: &a x, b: *a}\n" +
		"spec:\n  requestedFreight:\n  - &rf\n    origin: {kind: Warehouse, name: w}\n    sources: {direct: true}\n" +
		"  promotionTemplate:\n    spec:\n      steps:\n      - uses: git-clone\n        config: {<<: {path: ./out}, on: yes}\n"
	for _, seed := range []string{
		stage,
		"metadata: {name: on}\n",
		"metadata: {name: s2, annotations: {t: 2024-01-01T00:00:00Z, n: 0x1F, f: .inf}}\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b, *b]\n",
		"a: &a {k: v}\nb: {<<: [*a, *a], k: w}\n",
		"a: &a [*a]\n", "? [1]\n: 2\n", "a: !!binary aGk=\n", "---\n---\na: 1\n---\nb: 2\n",
		"{", "- - - -", "\t", "\x00", "",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkNo5xx(t, http.MethodPost, "/api/v1/projects/fz/stages", "application/yaml", body)
	})
}

func FuzzStatusBody(f *testing.F) {
	run := "/api/v1/projects/fz/domains/dev/runs/rs/actions/a0/status"
	for _, seed := range []string{
		`{"attempt":1,"status":{"phase":"RUNNING"}}`,
		`{"attempt":2,"status":{"phase":"FAILED","error":{"kind":"USER","code":"1","message":"m"}}}`,
		`{"attempt":1,"status":{"phase":"SUCCEEDED","cacheStatus":"HIT"}}`,
		`{"attempt":0}`, `{"attempt":1e99,"status":{"phase":"QUEUED"}}`, `{`,
	} {
		f.Add([]byte(seed))
	}
	body, _ := json.Marshal(map[string]any{"action": map[string]any{
		"actionId": map[string]any{"run": map[string]any{"project": "fz", "domain": "dev", "name": "rs"}, "name": "a0"},
		"task":     map[string]any{"taskTemplate": map[string]any{"type": "external"}},
	}})
	checkNo5xx(f, http.MethodPost, "/api/v1/actions", "application/json", body)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkNo5xx(t, http.MethodPut, run, "application/json", body)
	})
}

// serverURL and token reach the fuzz workers, children of the test
// process, through the environment.
var serverURL, token string

func TestMain(m *testing.M) {
	// Fuzz workers are children of the test process: they use its server.
	if url := os.Getenv(urlEnv); url != "" {
		serverURL, token = url, os.Getenv(tokenEnv)
		os.Exit(m.Run())
	}
	stop, err := startServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

const (
	urlEnv   = "TASKACTIONS_FUZZ_URL"
	tokenEnv = "TASKACTIONS_FUZZ_TOKEN"
)

// startServer runs bin/taskactions on a temporary data dir and a free port.
func startServer() (stop func(), err error) {
	bin, err := filepath.Abs("../../bin/taskactions")
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: %w (make build first; make test does)", bin, err)
	}
	dir, err := os.MkdirTemp("", "fuzz")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--listen", addr, "--data-dir", filepath.Join(dir, "data"),
		"--executor-task-types", "echo,sleep", "--log-level", "warn", "--log-format", "json")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
	serverURL = "http://" + addr
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(serverURL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("server not ready")
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "data", "api-token"))
	if err != nil {
		stop()
		return nil, err
	}
	token = strings.TrimSpace(string(b))
	os.Setenv(urlEnv, serverURL)
	os.Setenv(tokenEnv, token)
	return stop, nil
}

func checkNo5xx(t testing.TB, method, path, contentType string, body []byte) {
	t.Helper()
	req, err := http.NewRequest(method, serverURL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	text := string(raw)
	if resp.StatusCode >= 500 {
		t.Fatalf("HTTP %d for %q: %s", resp.StatusCode, body, text)
	}
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("HTTP %d without a problem document for %q: %s", resp.StatusCode, body, text)
	}
}
