package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// The fuzz targets send arbitrary bodies to the real server: whatever they
// are, the answer is never a 5xx, and an error is always a problem
// document. make test runs each briefly; run longer by hand with
//
//	go test -run '^$' -fuzz FuzzEnqueueBody -fuzztime 5m ./test/e2e

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
		checkNo5xx(t, http.MethodPost, "/api/v1/actions", body)
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
	checkNo5xx(f, http.MethodPost, "/api/v1/actions", body)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkNo5xx(t, http.MethodPut, run, body)
	})
}

func checkNo5xx(t testing.TB, method, path string, body []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL()+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text := readAll(t, resp.Body)
	if resp.StatusCode >= 500 {
		t.Fatalf("HTTP %d for %q: %s", resp.StatusCode, body, text)
	}
	if resp.StatusCode >= 400 && resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("HTTP %d without a problem document for %q: %s", resp.StatusCode, body, text)
	}
}
