package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"taskactions/pkg/client"
)

// stageYAML is a Stage in YAML, with more YAML under metadata and after
// the spec.
func stageYAML(name, metadata, rest string) string {
	return "apiVersion: kargo.akuity.io/v1alpha1\nkind: Stage\nmetadata:\n  name: " + name + "\n" + metadata +
		"spec:\n  requestedFreight:\n  - origin: {kind: Warehouse, name: w}\n    sources: {direct: true}\n" + rest
}

func createStageYAML(t *testing.T, project, body string) *client.CreateStageResponse {
	t.Helper()
	r, err := srv.api.CreateStageWithBodyWithResponse(context.Background(), project, "application/yaml", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A YAML body is bounded like a JSON body: a flat anchor referenced
// 65,000 times (a 270 KiB body that would read as 1 GiB of JSON) is
// refused with 413 naming the limit, and the server's memory does not
// grow with what the body would have expanded to; 80,000 keys are read
// (and refused by the schema) like the same keys in JSON.
func TestYAMLBodyBounded(t *testing.T) {
	p := stageProject()
	bomb := stageYAML("bomb", "", "  promotionTemplate:\n    spec:\n      steps:\n      - uses: git-clone\n        config:\n"+
		"          a: &a "+strings.Repeat("x", 16<<10)+"\n          b: ["+strings.Repeat("*a, ", 65000)+"*a]\n")
	base := resetPeakRSS(t)
	r := createStageYAML(t, p, bomb)
	peak := peakRSS(t)
	if r.StatusCode() != http.StatusRequestEntityTooLarge || r.ApplicationproblemJSONDefault == nil ||
		!strings.Contains(value(r.ApplicationproblemJSONDefault.Detail), "1048576 bytes") {
		t.Errorf("anchor bomb (%d bytes): HTTP %d %s, want 413 naming the 1048576-byte limit", len(bomb), r.StatusCode(), r.Body)
	}
	if grew := int64(peak) - int64(base); grew > 256<<20 {
		t.Errorf("anchor bomb: the server's peak RSS grew by %d MiB (from %d MiB)", grew>>20, base>>20)
	}

	var keys strings.Builder
	keys.WriteString("  labels: {")
	for i := range 80000 {
		fmt.Fprintf(&keys, "k%d: v, ", i)
	}
	keys.WriteString("}\n")
	body := stageYAML("keys", keys.String(), "")
	r = createStageYAML(t, p, body)
	if r.StatusCode() != http.StatusBadRequest || !strings.Contains(string(r.Body), `"/metadata/labels"`) {
		t.Errorf("80,000 labels (%d bytes): HTTP %d %.300s, want 400 at /metadata/labels", len(body), r.StatusCode(), r.Body)
	}
}

// A timestamp written as a plain YAML value is the string it is written
// as (kubectl reads it so), not an error about Go's time.Time.
func TestYAMLTimestampIsAString(t *testing.T) {
	p := stageProject()
	r := createStageYAML(t, p, stageYAML("stamped", "  annotations:\n    released: 2024-01-01T00:00:00Z\n    day: 2024-01-01\n", ""))
	if r.StatusCode() != http.StatusCreated || r.JSON201 == nil {
		t.Fatalf("HTTP %d %s, want 201", r.StatusCode(), r.Body)
	}
	if a := r.JSON201.Annotations; a["released"] != "2024-01-01T00:00:00Z" || a["day"] != "2024-01-01" {
		t.Errorf("annotations %v, want the timestamps as written", a)
	}
}

// resetPeakRSS resets the process's peak resident set (the server runs in
// the test's process) and returns the resident set now.
func resetPeakRSS(t *testing.T) uint64 {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak RSS: %v", err)
	}
	return procStatusBytes(t, "VmRSS:")
}

func peakRSS(t *testing.T) uint64 { return procStatusBytes(t, "VmHWM:") }

func procStatusBytes(t *testing.T, field string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			var kb uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10
			}
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
