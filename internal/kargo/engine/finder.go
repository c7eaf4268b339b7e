package engine

import (
	"context"
	"fmt"

	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/kargo/credentials"
)

// Subscription is what a Warehouse subscribes to, as the finders need it:
// one of a git repository, an image repository or a chart.
type Subscription struct {
	Git       string // a git subscription's repoURL
	Image     string // an image subscription's repoURL
	ChartRepo string // a chart subscription's repoURL
	ChartName string // and its chart's name (empty for OCI)
}

// Warehouses are the Warehouses' subscriptions.
type Warehouses interface {
	// Subscriptions of Warehouse name in project; found is false when
	// there is no such Warehouse.
	Subscriptions(ctx context.Context, project, name string) (subs []Subscription, found bool, err error)
}

// Finder finds an artifact in a Promotion's Freight as Kargo's
// internal/controller/freight finder does (FindImage, FindCommit,
// FindChart, HasAmbiguousImageRequest): without an origin named, the
// Warehouses of the Stage's Freight requests that subscribe to the
// repository decide which Freight it comes from, and two of them is
// ambiguous.
//
// Without Warehouses (this server does not serve them yet) an origin's
// subscriptions are taken to be what its Freight in the collection
// carries: the same answers as Kargo's for Freight that its Warehouse
// made, and no "Warehouse not found" for Freight made by hand.
type Finder struct {
	Project    string
	Requests   []kargoapi.FreightRequest
	Freight    []kargoapi.FreightReference
	Warehouses Warehouses
}

// subscriptions are an origin's.
func (f Finder) subscriptions(ctx context.Context, origin kargoapi.FreightOrigin) ([]Subscription, error) {
	if f.Warehouses != nil {
		subs, found, err := f.Warehouses.Subscriptions(ctx, f.Project, origin.Name)
		if err != nil {
			return nil, fmt.Errorf("error getting Warehouse %q in namespace %q: %w", origin.Name, f.Project, err)
		}
		if !found {
			return nil, fmt.Errorf("Warehouse %q not found in namespace %q", origin.Name, f.Project)
		}
		return subs, nil
	}
	var subs []Subscription
	for _, ref := range f.Freight {
		if !ref.Origin.Equals(&origin) {
			continue
		}
		for _, c := range ref.Commits {
			subs = append(subs, Subscription{Git: c.RepoURL})
		}
		for _, i := range ref.Images {
			subs = append(subs, Subscription{Image: i.RepoURL})
		}
		for _, c := range ref.Charts {
			subs = append(subs, Subscription{ChartRepo: c.RepoURL, ChartName: c.Name})
		}
	}
	return subs, nil
}

// originOf is the one requested origin with a subscription matching, nil
// when none has one; two is the error ambiguous makes.
func (f Finder) originOf(ctx context.Context, match func(Subscription) bool, ambiguous func() error) (*kargoapi.FreightOrigin, error) {
	var found *kargoapi.FreightOrigin
	for i := range f.Requests {
		origin := f.Requests[i].Origin
		subs, err := f.subscriptions(ctx, origin)
		if err != nil {
			return nil, err
		}
		for _, s := range subs {
			if !match(s) {
				continue
			}
			if found != nil {
				return nil, ambiguous()
			}
			found = &origin
		}
	}
	return found, nil
}

// FindImage is the image of repoURL in the Freight from origin (from the
// one requested origin that has it when origin is nil); nil when none.
func (f Finder) FindImage(ctx context.Context, origin *kargoapi.FreightOrigin, repoURL string) (*kargoapi.Image, error) {
	if origin == nil {
		var err error
		origin, err = f.originOf(ctx, func(s Subscription) bool { return s.Image != "" && s.Image == repoURL }, func() error {
			return fmt.Errorf("multiple requested Freight could potentially provide a container image from repository %s: please provide a Freight origin to disambiguate", repoURL)
		})
		if err != nil || origin == nil {
			return nil, err
		}
	}
	for _, ref := range f.Freight {
		if ref.Origin.Equals(origin) {
			for _, img := range ref.Images {
				if img.RepoURL == repoURL {
					return &img, nil
				}
			}
		}
	}
	return nil, nil
}

// FindCommit is FindImage for a git repository (URLs compared
// normalized).
func (f Finder) FindCommit(ctx context.Context, origin *kargoapi.FreightOrigin, repoURL string) (*kargoapi.GitCommit, error) {
	repoURL = credentials.NormalizeGitURL(repoURL)
	if origin == nil {
		var err error
		origin, err = f.originOf(ctx, func(s Subscription) bool {
			return s.Git != "" && credentials.NormalizeGitURL(s.Git) == repoURL
		}, func() error {
			return fmt.Errorf("multiple requested Freight could potentially provide a commit from repo %s; please update promotion steps to disambiguate", repoURL)
		})
		if err != nil || origin == nil {
			return nil, err
		}
	}
	for _, ref := range f.Freight {
		if ref.Origin.Equals(origin) {
			for _, c := range ref.Commits {
				if credentials.NormalizeGitURL(c.RepoURL) == repoURL {
					return &c, nil
				}
			}
		}
	}
	return nil, nil
}

// NotFoundError is Kargo's freight.NotFoundError (a chart no requested
// Freight can provide).
type NotFoundError struct{ msg string }

func (e NotFoundError) Error() string { return e.msg }

// FindChart is FindImage for a chart (chartName empty for OCI). Without
// an origin, no requested origin having the chart is a NotFoundError.
func (f Finder) FindChart(ctx context.Context, origin *kargoapi.FreightOrigin, repoURL, chartName string) (*kargoapi.Chart, error) {
	if origin == nil {
		var err error
		origin, err = f.originOf(ctx, func(s Subscription) bool {
			return s.ChartRepo != "" && s.ChartRepo == repoURL && s.ChartName == chartName
		}, func() error {
			return fmt.Errorf("multiple requested Freight could potentially provide a chart from repository %s: please provide a Freight origin to disambiguate", repoURL)
		})
		if err != nil {
			return nil, err
		}
		if origin == nil {
			if chartName == "" {
				return nil, NotFoundError{msg: fmt.Sprintf("chart from repo %s not found in referenced Freight", repoURL)}
			}
			return nil, NotFoundError{msg: fmt.Sprintf("chart %q from repo %s not found in referenced Freight", chartName, repoURL)}
		}
	}
	for _, ref := range f.Freight {
		if ref.Origin.Equals(origin) {
			for _, c := range ref.Charts {
				if c.RepoURL == repoURL && c.Name == chartName {
					return &c, nil
				}
			}
		}
	}
	return nil, nil
}

// HasAmbiguousImageRequest reports whether two requested origins
// subscribe to one image repository (Kargo's: then a step that picks
// images by itself needs them named).
func (f Finder) HasAmbiguousImageRequest(ctx context.Context) (bool, error) {
	seen := map[string]bool{}
	for _, r := range f.Requests {
		subs, err := f.subscriptions(ctx, r.Origin)
		if err != nil {
			return false, err
		}
		for _, s := range subs {
			if s.Image == "" {
				continue
			}
			if seen[s.Image] {
				return true, fmt.Errorf("multiple requested Freight could potentially provide a container image from repository %s", s.Image)
			}
			seen[s.Image] = true
		}
	}
	return false, nil
}
