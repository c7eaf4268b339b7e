package steps

import (
	"context"
	"errors"

	"taskactions/internal/executor/plugins"
	"taskactions/internal/kargo/credentials"
	"taskactions/internal/kargo/engine"
)

// Config is what the steps need.
type Config struct {
	Promotions Promotions
	Stages     Stages
	Dirs       Dirs
	// Credentials finds a repository's credentials (none when nil).
	Credentials credentials.Database
	// AllowLocalRepos lets git steps use file:// URLs and local paths:
	// repositories on this server's disk, which a Stage's author should
	// not reach unless the operator says so.
	AllowLocalRepos bool
	// Warehouses are the Warehouses' subscriptions, for the steps that
	// pick images from the Freight by themselves (kustomize-set-image
	// without images); nil: judged from the Freight (engine.Finder).
	Warehouses engine.Warehouses
}

// Runners are the built-in steps, one per kind.
func Runners(cfg Config) []Runner {
	creds := cfg.Credentials
	if creds == nil {
		creds = &credentials.Chain{}
	}
	return []Runner{
		&gitCloner{creds: creds, allowLocal: cfg.AllowLocalRepos},
		gitTreeClearer{},
		gitCommitter{allowLocal: cfg.AllowLocalRepos},
		newGitPusher(creds, cfg.AllowLocalRepos),
		kustomizeImageSetter{warehouses: cfg.Warehouses},
		kustomizeBuilder{},
		helmChartUpdater{creds: creds},
		helmTemplateRunner{creds: creds},
		yamlUpdater{},
		jsonUpdater{},
		fileCopier{},
		fileDeleter{},
		outputComposer{},
		refused{kind: "argocd-update", why: "argocd-update needs Argo CD: this server runs no Argo CD controller and reaches no Argo CD Applications, so it cannot update or wait for one; sync the Application from Argo CD (or an http step to its API)"},
		refused{kind: "git-open-pr", why: "git-open-pr needs a Git hosting provider's pull request API (GitHub, GitLab, Gitea, Azure DevOps, Bitbucket), which a repository served by git alone does not have; push to a branch with git-push (generateTargetBranch: true) and open the pull request on the provider"},
		refused{kind: "git-wait-for-pr", why: "git-wait-for-pr needs a Git hosting provider's pull request API, which a repository served by git alone does not have; this server opens no pull requests (see git-open-pr)"},
		refused{kind: "helm-update-image", why: "helm-update-image was removed in Kargo v1.3 (akuity/kargo#3377) and is not a step of Kargo v1.6: set the image in the chart's values with yaml-update, e.g. value: ${{ imageFrom(vars.imageRepo).Tag }}"},
	}
}

// Plugins are the runners as executor plugins, by task type.
func Plugins(cfg Config) map[string]plugins.Plugin {
	out := map[string]plugins.Plugin{}
	for _, r := range Runners(cfg) {
		out[r.Name()] = newPlugin(r, cfg)
	}
	return out
}

// refused is a step this server knows but cannot run: it ends Errored,
// not retried, saying why.
type refused struct{ kind, why string }

func (r refused) Name() string { return r.kind }

func (r refused) Run(context.Context, *StepContext) (Result, error) {
	return errored(&TerminalError{Err: errors.New(r.why)})
}
