package warehouses

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/credentials"
	"taskactions/internal/kargo/git"
)

// discover runs each subscription's discovery, in Kargo's order: Git,
// images, charts. The first failure ends it: Freight is made of every
// subscription or of none.
func (c *Controller) discover(ctx context.Context, w *kargoapi.Warehouse) (*kargoapi.DiscoveredArtifacts, error) {
	arts := &kargoapi.DiscoveredArtifacts{DiscoveredAt: metav1.NewTime(c.now().Truncate(time.Second))}
	var gits []kargoapi.GitSubscription
	var images []kargoapi.ImageSubscription
	var charts []kargoapi.ChartSubscription
	for _, s := range w.Spec.Subscriptions {
		switch {
		case s.Git != nil:
			gits = append(gits, *s.Git)
		case s.Image != nil:
			images = append(images, *s.Image)
		case s.Chart != nil:
			charts = append(charts, *s.Chart)
		}
	}
	var err error
	if arts.Git, err = discoverEach(ctx, c, w, "commits", credentials.TypeGit, gits,
		func(s kargoapi.GitSubscription) string { return s.RepoURL }, c.findCommits); err != nil {
		return nil, err
	}
	if arts.Images, err = discoverEach(ctx, c, w, "images", credentials.TypeImage, images,
		func(s kargoapi.ImageSubscription) string { return s.RepoURL }, discoverImages); err != nil {
		return nil, err
	}
	if arts.Charts, err = discoverEach(ctx, c, w, "charts", credentials.TypeHelm, charts,
		func(s kargoapi.ChartSubscription) string { return s.RepoURL }, c.findCharts); err != nil {
		return nil, err
	}
	return arts, nil
}

// discoverEach runs find on each subscription with the credentials of
// its repository, logging each poll with the repository it reaches.
func discoverEach[S, R any](ctx context.Context, c *Controller, w *kargoapi.Warehouse, what string, t credentials.Type, subs []S,
	repoURL func(S) string, find func(context.Context, S, *credentials.Credentials) (R, error)) ([]R, error) {
	var out []R
	for _, sub := range subs {
		url := repoURL(sub)
		creds, err := c.credentials(ctx, w.Namespace, t, url)
		if err != nil {
			return nil, fmt.Errorf("error discovering %s: error obtaining credentials for %s repository %q: %w", what, t, url, err)
		}
		c.log.Info().Str("warehouse", w.Namespace+"/"+w.Name).Str("repoURL", url).Msg("discovering " + what)
		res, err := find(ctx, sub, creds)
		if err != nil {
			return nil, fmt.Errorf("error discovering %s: %w", what, err)
		}
		out = append(out, res)
	}
	return out, nil
}

// findCommits is Git discovery with the controller's client options.
func (c *Controller) findCommits(ctx context.Context, sub kargoapi.GitSubscription, creds *credentials.Credentials) (kargoapi.GitDiscoveryResult, error) {
	src := c.git
	if creds != nil {
		src.client.Credentials = &git.RepoCredentials{Username: creds.Username, Password: creds.Password, SSHPrivateKey: creds.SSHPrivateKey}
	}
	return discoverCommits(ctx, sub, src)
}

// findCharts is chart discovery with the default HTTP client.
func (c *Controller) findCharts(ctx context.Context, sub kargoapi.ChartSubscription, creds *credentials.Credentials) (kargoapi.ChartDiscoveryResult, error) {
	return discoverCharts(ctx, sub, creds, nil)
}

// credentials looks up a repository's credentials (none without a
// database).
func (c *Controller) credentials(ctx context.Context, project string, t credentials.Type, repoURL string) (*credentials.Credentials, error) {
	if c.creds == nil {
		return nil, nil
	}
	return c.creds.Get(ctx, project, t, repoURL)
}
