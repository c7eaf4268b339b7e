package steps

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"taskactions/internal/kargo/credentials"
)

// helmChartUpdater is helm-update-chart (Kargo's helm_chart_updater.go):
// the versions of the named dependencies set in the chart's Chart.yaml,
// then Helm's dependency update (Chart.lock, charts/). Output:
// {"commitMessage"} when a version changed.
type helmChartUpdater struct{ creds credentials.Database }

type helmUpdateChartConfig struct {
	Path   string `json:"path"`
	Charts []struct {
		Repository string `json:"repository"`
		Name       string `json:"name"`
		Version    string `json:"version"`
	} `json:"charts"`
}

func (helmChartUpdater) Name() string { return "helm-update-chart" }

func (h helmChartUpdater) Run(ctx context.Context, sc *StepContext) (Result, error) {
	cfg, err := decode[helmUpdateChartConfig](h.Name(), sc.Config)
	if err != nil {
		return errored(err)
	}
	deps, err := newHelmDeps(h.creds, sc.Project, sc.WorkDir, sc.GitHome)
	if err != nil {
		return errored(fmt.Errorf("failed to create Helm dependency manager: %w", err))
	}
	defer deps.teardown()
	updates := make([]chartDependency, 0, len(cfg.Charts))
	for _, c := range cfg.Charts {
		updates = append(updates, chartDependency{Repository: c.Repository, Name: c.Name, Version: c.Version})
	}
	changes, err := deps.update(ctx, cfg.Path, updates)
	if err != nil {
		return errored(err)
	}
	if len(changes) == 0 {
		return succeeded(nil)
	}
	var b strings.Builder
	b.WriteString("Updated chart dependencies for " + cfg.Path + "\n")
	for _, name := range slices.Sorted(mapsKeys(changes)) { // sorted (Kargo's order is the map's)
		change := changes[name]
		if change == "" {
			change = "removed"
		}
		fmt.Fprintf(&b, "\n- %s: %s", name, change)
	}
	return succeeded(map[string]any{"commitMessage": b.String()})
}
