package warehouses

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// pathFilter is a Git subscription's includePaths and excludePaths, with
// Kargo's pattern syntax (internal/pattern in v1.6): "glob:" (doublestar,
// so ** crosses directories), "regex:" or "regexp:", and otherwise a base
// directory, which matches every path under it.
type pathFilter struct {
	include, exclude []func(string) bool
}

// newPathFilter is nil when neither list is set: every commit passes.
func newPathFilter(include, exclude []string) (*pathFilter, error) {
	if len(include) == 0 && len(exclude) == 0 {
		return nil, nil
	}
	f := &pathFilter{}
	var err error
	if f.include, err = pathPatterns(include); err != nil {
		return nil, fmt.Errorf("error parsing include selector: %w", err)
	}
	if f.exclude, err = pathPatterns(exclude); err != nil {
		return nil, fmt.Errorf("error parsing exclude selector: %w", err)
	}
	return f, nil
}

// matches says whether a commit that changed these paths counts: one
// path included (all are, without includePaths) and not excluded is
// enough.
func (f *pathFilter) matches(paths []string) bool {
	for _, p := range paths {
		if len(f.include) > 0 && !anyMatch(f.include, p) {
			continue
		}
		if anyMatch(f.exclude, p) {
			continue
		}
		return true
	}
	return false
}

func anyMatch(ms []func(string) bool, s string) bool {
	for _, m := range ms {
		if m(s) {
			return true
		}
	}
	return false
}

func pathPatterns(patterns []string) ([]func(string) bool, error) {
	out := make([]func(string) bool, 0, len(patterns))
	for _, p := range patterns {
		m, err := pathPattern(p)
		if err != nil {
			return nil, fmt.Errorf("parse error path selector %q: %w", p, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func pathPattern(p string) (func(string) bool, error) {
	switch {
	case strings.HasPrefix(p, "glob:"):
		g := strings.TrimPrefix(p, "glob:")
		if !doublestar.ValidatePattern(g) {
			return nil, doublestar.ErrBadPattern
		}
		return func(s string) bool { return doublestar.MatchUnvalidated(g, s) }, nil
	case strings.HasPrefix(p, "regex:"), strings.HasPrefix(p, "regexp:"):
		re, err := regexp.Compile(p[strings.Index(p, ":")+1:])
		if err != nil {
			return nil, err
		}
		return re.MatchString, nil
	default:
		return func(s string) bool {
			rel, err := filepath.Rel(p, s)
			return err == nil && !strings.Contains(rel, "..")
		}, nil
	}
}
