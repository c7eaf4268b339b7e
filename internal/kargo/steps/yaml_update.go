package steps

import (
	"context"
	"fmt"
	"strings"
)

// yamlUpdater is yaml-update (Kargo's yaml_updater.go): the scalars at
// the keys of a YAML file set, the rest of the file (comments, style) as
// it was. Output: {"commitMessage"}.
type yamlUpdater struct{}

type yamlUpdateConfig struct {
	Path    string `json:"path"`
	Updates []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"updates"`
}

func (yamlUpdater) Name() string { return "yaml-update" }

func (y yamlUpdater) Run(_ context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[yamlUpdateConfig](y.Name(), sc.Config)
	if err != nil {
		return errored(err)
	}
	if len(cfg.Updates) == 0 {
		return succeeded(nil)
	}
	updates := make([]yamlUpdate, len(cfg.Updates))
	var msg strings.Builder
	fmt.Fprintf(&msg, "Updated %s\n", cfg.Path)
	for i, u := range cfg.Updates {
		updates[i] = yamlUpdate{Key: u.Key, Value: u.Value}
		fmt.Fprintf(&msg, "\n- %s: %v", u.Key, quoteIfNecessary(u.Value))
	}
	file, err := Join(sc.WorkDir, cfg.Path)
	if err != nil {
		return errored(fmt.Errorf("values file update failed: error joining path %q: %w", cfg.Path, err))
	}
	if err := setValuesInFile(file, updates); err != nil {
		return errored(fmt.Errorf("values file update failed: error updating image references in values file %q: %w", cfg.Path, sanitizePath(err, sc.WorkDir)))
	}
	return succeeded(map[string]any{"commitMessage": msg.String()})
}
