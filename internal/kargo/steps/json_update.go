package steps

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/tidwall/sjson"
)

// jsonUpdater is json-update (Kargo's json_updater.go): the keys of a
// JSON file set with tidwall/sjson (its path syntax), values scalars.
// Output: {"commitMessage"}.
type jsonUpdater struct{}

type jsonUpdateConfig struct {
	Path    string `json:"path"`
	Updates []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"updates"`
}

func (jsonUpdater) Name() string { return "json-update" }

func (j jsonUpdater) Run(_ context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[jsonUpdateConfig](j.Name(), sc.Config)
	if err != nil {
		return errored(err)
	}
	if len(cfg.Updates) == 0 {
		return succeeded(nil)
	}
	if err := j.update(sc.WorkDir, cfg); err != nil {
		return errored(fmt.Errorf("JSON file update failed: %w", sanitizePath(err, sc.WorkDir)))
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "Updated %s\n", cfg.Path)
	for _, u := range cfg.Updates {
		if s, ok := u.Value.(string); ok {
			fmt.Fprintf(&msg, "\n- %s: %q", u.Key, s)
		} else {
			fmt.Fprintf(&msg, "\n- %s: %v", u.Key, u.Value)
		}
	}
	return succeeded(map[string]any{"commitMessage": msg.String()})
}

func (jsonUpdater) update(workDir string, cfg jsonUpdateConfig) error {
	file, err := Join(workDir, cfg.Path)
	if err != nil {
		return fmt.Errorf("error joining path %q: %w", cfg.Path, err)
	}
	content, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("error reading JSON file %q: %w", file, err)
	}
	for _, u := range cfg.Updates {
		switch u.Value.(type) {
		case string, bool, float64:
		default:
			return fmt.Errorf("value for key %q is not a scalar type", u.Key)
		}
		s, err := sjson.Set(string(content), u.Key, u.Value)
		if err != nil {
			return fmt.Errorf("error setting key %q in JSON file: %w", u.Key, err)
		}
		content = []byte(s)
	}
	if err := os.WriteFile(file, content, 0o600); err != nil {
		return fmt.Errorf("error writing updated JSON file %q: %w", file, err)
	}
	return nil
}
