package e2e

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"taskactions/internal/app"
)

// With --cors-origins, that origin's pages may call the API (preflight and
// request); no other origin gets CORS headers, and without the flag none
// does. --metrics-listen serves /metrics without a token, and nothing else.
// The credentials in the data dir are private.
//
// It reads better whole: one scenario, its steps in the order a user takes them.
func TestCORSMetricsListenerAndCredentialFiles(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	const ui = "http://ui.example.test"
	dataDir := filepath.Join(t.TempDir(), "data")
	s, err := startServer(dataDir, func(c *app.Config) {
		c.CORSOrigins = []string{ui}
		c.MetricsListen = metricsAddr
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()

	preflight := func(base, origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, base+"/api/v1/actions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := preflight(s.URL(), ui); r.Header.Get("Access-Control-Allow-Origin") != ui || !strings.Contains(strings.ToLower(r.Header.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Errorf("preflight from %s: %s, headers %v", ui, r.Status, r.Header)
	}
	for base, origin := range map[string]string{s.URL(): "http://other.test", srv.URL(): ui} {
		if r := preflight(base, origin); r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("preflight from %s to %s allowed: %v", origin, base, r.Header)
		}
	}
	run := newRun()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/api/v1/actions", strings.NewReader(`{"action":{"actionId":{"run":{"project":"`+run.Project+`","domain":"dev","name":"r"},"name":"a0"},"task":{"taskTemplate":{"type":"external"}}}}`))
	req.Header.Set("Origin", ui)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Access-Control-Allow-Origin") != ui {
		t.Errorf("POST from %s: %s, Access-Control-Allow-Origin %q", ui, resp.Status, resp.Header.Get("Access-Control-Allow-Origin"))
	}
	// The tail read of a log from that origin: Range may be sent, and
	// Content-Range and the log's headers read.
	if exposed := resp.Header.Get("Access-Control-Expose-Headers"); !strings.Contains(exposed, "Content-Range") || !strings.Contains(exposed, "Log-Dropped-Bytes") {
		t.Errorf("exposed headers %q: no Content-Range or Log-Dropped-Bytes", exposed)
	}
	logs, _ := http.NewRequest(http.MethodOptions, s.URL()+"/api/v1/projects/p/domains/dev/runs/r/actions/a0/logs", nil)
	logs.Header.Set("Origin", ui)
	logs.Header.Set("Access-Control-Request-Method", "GET")
	logs.Header.Set("Access-Control-Request-Headers", "authorization,range,if-range")
	if r, err := http.DefaultClient.Do(logs); err != nil {
		t.Fatal(err)
	} else if r.Body.Close(); r.Header.Get("Access-Control-Allow-Origin") != ui || !strings.Contains(strings.ToLower(r.Header.Get("Access-Control-Allow-Headers")), "range") {
		t.Errorf("preflight of a log read with Range from %s: %s, headers %v", ui, r.Status, r.Header)
	}

	m, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(m.Body)
	m.Body.Close()
	if m.StatusCode != http.StatusOK || !strings.Contains(string(body), "taskactions_http_requests_total") {
		t.Errorf("/metrics on its own listener: %s", m.Status)
	}
	if r, err := http.Get("http://" + metricsAddr + "/api/v1/session"); err != nil || r.StatusCode != http.StatusNotFound {
		t.Errorf("the metrics listener serves more than /metrics: %v %v", err, r.Status)
	}

	for _, name := range []string{app.FileAPIToken, "auth-key"} {
		st, err := os.Stat(filepath.Join(dataDir, name))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", name, err)
		}
	}
}
