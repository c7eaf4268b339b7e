package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every query of the Grafana dashboard the chart ships reads metrics the
// server exposes (a dashboard of empty panels is what a renamed metric
// leaves), and every metric of this server's own is in the docs' table.
func TestGrafanaDashboardReadsMetricsThatExist(t *testing.T) {
	raw, err := os.ReadFile("../../charts/taskactions/dashboards/taskactions.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	// A server that has served a request (request metrics have no series
	// before one), scraped as Prometheus does: GET /metrics with the
	// bearer token.
	if _, err := srv.api.ListProjectsWithResponse(t.Context()); err != nil {
		t.Fatal(err)
	}
	resp, err := srv.http.Get(srv.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	exposition := readAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	exposed := map[string]bool{}
	for _, line := range strings.Split(exposition, "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			exposed[strings.Fields(name)[0]] = true
		}
	}
	metric := regexp.MustCompile(`\b(taskactions_[a-z_]+|process_[a-z_]+|go_[a-z_]+)\b`)
	queried := 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			for _, name := range metric.FindAllString(target.Expr, -1) {
				queried++
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					base = strings.TrimSuffix(base, suffix)
				}
				if !exposed[name] && !exposed[base] {
					t.Errorf("panel %q queries %s, which /metrics does not expose", p.Title, name)
				}
			}
		}
	}
	if queried < 10 {
		t.Fatalf("%d metrics queried: the dashboard was not read", queried)
	}
	docs, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range exposed {
		if strings.HasPrefix(name, "taskactions_") && !strings.Contains(string(docs), "`"+name+"`") {
			t.Errorf("%s is exposed but not in the metrics table of docs/operations.md", name)
		}
	}
}
