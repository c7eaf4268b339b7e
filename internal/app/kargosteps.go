package app

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/kubernetes"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/executor"
	"taskactions/internal/executor/plugins"
	"taskactions/internal/kargo/credentials"
	"taskactions/internal/kargo/steps"
)

// Kargo's built-in promotion steps (package steps) as executor plugins,
// and what they need: the Promotions' working directories, the
// repositories' credentials, the Promotion and Stage caches (read when a
// step runs, after the manager started).

// kargoWork holds the Promotions' working directories.
func (a *App) kargoWork() steps.Dirs {
	return steps.Dirs{Root: filepath.Join(a.cfg.DataDir, "kargo-work")}
}

// kargoStepAdmit holds a Promotion's step actions, of every task type,
// until the orchestrator has decided them in the Promotion's current
// start (steps.Gate); nil where the orchestrator does not run, beside
// this executor, and so decides nothing here.
func (a *App) kargoStepAdmit() executor.Admit {
	if !a.kargoControllersOn() {
		return nil
	}
	return steps.NewGate(kargoPromotions{a}, a.kargoWork()).Admit
}

// kargoStepPlugins are the steps' plugins, by task type.
func (a *App) kargoStepPlugins() map[string]plugins.Plugin {
	return steps.Plugins(steps.Config{
		Promotions: kargoPromotions{a}, Stages: kargoStages{a}, Dirs: a.kargoWork(),
		Credentials: a.kargoCredentials(), AllowLocalRepos: a.cfg.PromotionGitLocal,
	})
}

// kargoCredentials are the repositories' credentials the promotion steps
// and the Warehouse controller share, made on first use: the credentials
// file, and on a cluster Kargo's Secrets before it (useKargoSecrets).
func (a *App) kargoCredentials() *credentials.Chain {
	if a.kargoCreds != nil {
		return a.kargoCreds
	}
	a.kargoCreds = &credentials.Chain{AllowOverHTTP: a.cfg.KargoCredentialsOverHTTP}
	if f := a.cfg.KargoCredentialsFile; f != "" {
		file, err := credentials.LoadFile(f) // checked by Config.Validate
		if err != nil {
			a.log.Error().Err(err).Msg("credentials file not read: the promotion steps and Warehouses have no credentials")
		} else {
			a.kargoCreds.Sources = append(a.kargoCreds.Sources, file)
			if st, err := os.Stat(f); err == nil && st.Mode().Perm()&0o077 != 0 {
				a.log.Warn().Str("file", f).Msg("the credentials file is readable by others: chmod 600")
			}
		}
	}
	return a.kargoCreds
}

// useKargoSecrets puts Kargo's credentials Secrets of a cluster first.
func (a *App) useKargoSecrets(kube kubernetes.Interface) {
	if kube != nil {
		c := a.kargoCredentials()
		c.Sources = append([]credentials.Source{&credentials.Secrets{Kube: kube}}, c.Sources...)
	}
}

type kargoPromotions struct{ a *App }

func (p kargoPromotions) OfRun(project, run string) *kargoapi.Promotion {
	if p.a.promos == nil {
		return nil
	}
	return p.a.promos.OfRun(project, run)
}

type kargoStages struct{ a *App }

func (s kargoStages) Get(namespace, name string) (*kargoapi.Stage, error) {
	if s.a.stages == nil {
		return nil, nil
	}
	return s.a.stages.Cache().Get(namespace, name)
}
