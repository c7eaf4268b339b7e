package steps

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// newStepContext is a step's context on fresh directories.
func newStepContext(t *testing.T, cfg string) *StepContext {
	t.Helper()
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &StepContext{WorkDir: work, GitHome: home, Alias: "step", Config: config(t, cfg),
		Project: "demo", Stage: "test", Promotion: "test.01jabcdefghjkmnpqrstvwxyz0.abc1234"}
}

// config decodes a step's config from JSON ("" is none).
func config(t *testing.T, s string) map[string]any {
	t.Helper()
	if s == "" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("config %s: %v", s, err)
	}
	return m
}

// writeFiles writes files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// run runs a runner with sc, config cfg.
func run(t *testing.T, r Runner, sc *StepContext, cfg string) (Result, error) {
	t.Helper()
	sc.Config = config(t, cfg)
	return r.Run(context.Background(), sc)
}

// mustSucceed runs a step that must succeed, and returns its output.
func mustSucceed(t *testing.T, r Runner, sc *StepContext, cfg string) map[string]any {
	t.Helper()
	res, err := run(t, r, sc, cfg)
	if err != nil || res.Status != kargoapi.PromotionStepStatusSucceeded {
		t.Fatalf("%s %s: %s %v", r.Name(), cfg, res.Status, err)
	}
	return res.Output
}
