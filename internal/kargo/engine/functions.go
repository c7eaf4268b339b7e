package engine

import (
	"context"
	"fmt"

	"github.com/expr-lang/expr"

	kargoapi "taskactions/api/kargo/v1alpha1"
)

// FreightScope is what Kargo's freight functions
// (internal/expressions/function/functions.go in Kargo v1.6) see: the
// Promotion's Freight and the Stage's requests (Finder), and a way to
// read a piece of Freight.
type FreightScope struct {
	Ctx    context.Context
	Finder Finder
	// Freight reads the project's Freight by name; nil, nil when there is
	// none.
	Freight func(ctx context.Context, name string) (*kargoapi.Freight, error)
}

// FreightFunctions are warehouse(), commitFrom(), imageFrom(),
// chartFrom() and freightMetadata() over s (none when s is nil):
//
//	warehouse(name)                       a FreightOrigin of kind Warehouse
//	imageFrom(repoURL[, origin])          the Image (RepoURL, Tag, Digest, ...) of the Freight, or nil
//	commitFrom(repoURL[, origin])         the GitCommit (ID, Branch, Tag, ...), or nil
//	chartFrom(repoURL[, name][, origin])  the Chart (Name, Version, ...), or nil
//	freightMetadata(freight, key)         a Freight's status.metadata[key], or nil
//
// Without an origin the one requested origin that could provide the
// artifact is used, and two are an error (Finder).
func FreightFunctions(s *FreightScope) []expr.Option {
	if s == nil {
		return nil
	}
	ctx := s.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return []expr.Option{
		expr.Function("warehouse", warehouseFn, new(func(name string) kargoapi.FreightOrigin)),
		expr.Function("commitFrom", func(a ...any) (any, error) {
			repoURL, origin, err := repoAndOrigin(a)
			if err != nil {
				return nil, err
			}
			return s.Finder.FindCommit(ctx, origin, repoURL)
		},
			new(func(repoURL string, origin kargoapi.FreightOrigin) kargoapi.GitCommit),
			new(func(repoURL string) kargoapi.GitCommit)),
		expr.Function("imageFrom", func(a ...any) (any, error) {
			repoURL, origin, err := repoAndOrigin(a)
			if err != nil {
				return nil, err
			}
			return s.Finder.FindImage(ctx, origin, repoURL)
		},
			new(func(repoURL string, origin kargoapi.FreightOrigin) kargoapi.Image),
			new(func(repoURL string) kargoapi.Image)),
		expr.Function("chartFrom", func(a ...any) (any, error) { return chartFrom(ctx, s.Finder, a) },
			new(func(repoURL string, chartName string, origin kargoapi.FreightOrigin) kargoapi.Chart),
			new(func(repoURL string, chartName string) kargoapi.Chart),
			new(func(repoURL string, origin kargoapi.FreightOrigin) kargoapi.Chart),
			new(func(repoURL string) kargoapi.Chart)),
		expr.Function("freightMetadata", func(a ...any) (any, error) { return freightMetadata(ctx, s, a) },
			new(func(freightRefName, key string) any)),
	}
}

func warehouseFn(a ...any) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("expected 1 argument, got %d", len(a))
	}
	name, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("argument must be string, got %T", a[0])
	}
	if name == "" {
		return nil, fmt.Errorf("name must not be empty")
	}
	return kargoapi.FreightOrigin{Kind: kargoapi.FreightOriginKindWarehouse, Name: name}, nil
}

// repoAndOrigin reads (repoURL[, origin]).
func repoAndOrigin(a []any) (string, *kargoapi.FreightOrigin, error) {
	if len(a) == 0 || len(a) > 2 {
		return "", nil, fmt.Errorf("expected 1-2 arguments, got %d", len(a))
	}
	repoURL, ok := a[0].(string)
	if !ok {
		return "", nil, fmt.Errorf("first argument must be string, got %T", a[0])
	}
	if len(a) == 1 {
		return repoURL, nil, nil
	}
	origin, ok := a[1].(kargoapi.FreightOrigin)
	if !ok {
		return "", nil, fmt.Errorf("second argument must be FreightOrigin, got %T", a[1])
	}
	return repoURL, &origin, nil
}

func chartFrom(ctx context.Context, f Finder, a []any) (any, error) {
	if len(a) == 0 || len(a) > 3 {
		return nil, fmt.Errorf("expected 1-3 arguments, got %d", len(a))
	}
	repoURL, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("first argument must be string, got %T", a[0])
	}
	var name string
	var origin *kargoapi.FreightOrigin
	if len(a) >= 2 {
		switch v := a[1].(type) {
		case string:
			name = v
		case kargoapi.FreightOrigin:
			origin = &v
		default:
			return nil, fmt.Errorf("second argument must be string or FreightOrigin, got %T", a[1])
		}
	}
	if len(a) == 3 {
		if name == "" {
			return nil, fmt.Errorf("when using three arguments, second argument must be string, got %T", a[1])
		}
		o, ok := a[2].(kargoapi.FreightOrigin)
		if !ok {
			return nil, fmt.Errorf("third argument must be FreightOrigin, got %T", a[2])
		}
		origin = &o
	}
	return f.FindChart(ctx, origin, repoURL, name)
}

func freightMetadata(ctx context.Context, s *FreightScope, a []any) (any, error) {
	if len(a) != 2 {
		return nil, fmt.Errorf("expected 2 argument, got %d", len(a))
	}
	name, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("argument must be string, got %T", a[0])
	}
	if name == "" {
		return nil, fmt.Errorf("freight ref name must not be empty")
	}
	key, ok := a[1].(string)
	if !ok {
		return nil, fmt.Errorf("argument must be string, got %T", a[1])
	}
	if key == "" {
		return nil, fmt.Errorf("metadata key must not be empty")
	}
	if s.Freight == nil {
		return nil, nil
	}
	f, err := s.Freight(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("failed to get freight %s: %w", name, err)
	}
	if f == nil {
		return nil, nil
	}
	var data any
	found, err := f.Status.GetMetadata(key, &data)
	if err != nil {
		return nil, fmt.Errorf("failed to get metadata %s from freight %s: %w", key, name, err)
	}
	if !found {
		return nil, nil
	}
	return data, nil
}
