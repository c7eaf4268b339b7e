package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"taskactions/internal/app"
)

// When the embedded etcd reaches its quota, a write is a 507 problem
// document that says what to do, and the server keeps serving: reads,
// health, and the alarm on /metrics. (That space comes back once objects
// are deleted is internal/controlplane's TestSpaceKeeperRecoversFromNoSpace.)
func TestOutOfSpaceIs507(t *testing.T) {
	s, err := startServer(filepath.Join(t.TempDir(), "data"), func(c *app.Config) {
		c.EtcdQuota = 20 << 20
		c.Retention = 0
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	run := newRun()
	pad := map[string]any{"pad": strings.Repeat("x", 400<<10)}
	var full *http.Response
	var body []byte
	for i := range 200 {
		spec := actionSpec(run, fmt.Sprintf("a%d", i), "", "external")
		spec.Action.Task.TaskTemplate.Custom = &pad
		resp, err := s.api.EnqueueActionWithResponse(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode() != http.StatusCreated {
			full, body = resp.HTTPResponse, resp.Body
			break
		}
	}
	if full == nil || full.StatusCode != http.StatusInsufficientStorage {
		t.Fatalf("filling the store ended with %v %s, want 507", full, body)
	}
	if ct := full.Header.Get("Content-Type"); ct != "application/problem+json" || !contains(string(body), "--etcd-quota") {
		t.Errorf("the 507: %s %s", ct, body)
	}
	if code, b := s.get(t, fmt.Sprintf("/projects/%s/domains/%s/runs/%s/actions/a0", run.Project, run.Domain, run.Name)); code != 200 {
		t.Errorf("a read while full: %d %s", code, b)
	}
	resp, err := s.http.Get(s.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz while full: %v %v", err, resp)
	}
	resp.Body.Close()
	resp, err = s.http.Get(s.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics := readAll(t, resp.Body)
	resp.Body.Close()
	if !contains(metrics, "taskactions_etcd_no_space 1") || !contains(metrics, "taskactions_etcd_quota_bytes 2.097152e+07") {
		t.Errorf("metrics while full lack the alarm or the quota")
	}
}
