package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"taskactions/internal/app"
)

// Without --promotion-http-allow the http step calls nothing, loopback
// included: a Stage writer cannot read a service of the server's machine
// through a Promotion's outputs. The step fails, naming the flag, and the
// service is never called.
func TestHTTPStepAllowsNothingByDefault(t *testing.T) {
	var calls atomic.Int64
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"secret":"s3cr3t"}`)
	}))
	defer secret.Close()
	s, err := startServer(filepath.Join(t.TempDir(), "data"), func(c *app.Config) {
		c.ExecutorTaskTypes, c.PromotionHTTPAllow = promoTaskTypes, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	k := newKProject(t, s)
	for i, url := range []string{secret.URL, strings.Replace(secret.URL, "127.0.0.1", "localhost", 1)} {
		name := fmt.Sprintf("local%d", i)
		k.createStage(name, direct(), nil, pstep("http", "read", map[string]any{
			"url": url, "outputs": []map[string]string{{"name": "secret", "fromExpression": "response.body.secret"}},
		}))
		p := k.finished(k.promote(name, k.createFreight(name, "").Name).Name)
		m := record(p, "read")
		if p.Status.Phase == "Succeeded" || !strings.Contains(m.Message, "--promotion-http-allow") {
			t.Errorf("%s: the Promotion %s, step %s %q; want it refused, naming the flag", url, p.Status.Phase, m.Status, m.Message)
		}
		if strings.Contains(mustMarshal(t, p.Status), "s3cr3t") {
			t.Errorf("%s: the Promotion's status has the secret", url)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the local service was called %d times", n)
	}
}
