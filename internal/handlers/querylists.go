package handlers

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// A query parameter that is a list (`phase` of listRuns) is described as
// the form style's default, repeated (`phase=A&phase=B`), which is what
// every generator sends (openapi-fetch sends nothing else). People and the
// docs (docs/api.md) write `phase=A,B`; both are taken, the second split into the first
// before the generated code and the validator read the query.

// commaListParams are the query parameters that are arrays of enum strings
// in every operation that has them: values that cannot hold a comma, so
// that splitting at commas never cuts one.
func commaListParams(doc *openapi3.T) map[string]bool {
	lists := map[string]bool{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, p := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
				if p.Value == nil || p.Value.In != openapi3.ParameterInQuery {
					continue
				}
				name := p.Value.Name
				ok, seen := lists[name]
				lists[name] = (ok || !seen) && enumList(p.Value.Schema)
			}
		}
	}
	for name, ok := range lists {
		if !ok {
			delete(lists, name)
		}
	}
	return lists
}

// enumList reports whether s is an exploded array of enum strings without
// a comma.
func enumList(s *openapi3.SchemaRef) bool {
	if s == nil || s.Value == nil || !s.Value.Type.Is(openapi3.TypeArray) || s.Value.Items == nil || s.Value.Items.Value == nil {
		return false
	}
	items := s.Value.Items.Value
	if !items.Type.Is(openapi3.TypeString) || len(items.Enum) == 0 {
		return false
	}
	for _, e := range items.Enum {
		if v, ok := e.(string); !ok || strings.Contains(v, ",") {
			return false
		}
	}
	return true
}

// splitCommaLists rewrites `name=A,B` as `name=A&name=B` for the names
// given.
func splitCommaLists(names map[string]bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if q, ok := splitLists(r.URL.RawQuery, names); ok {
				u := *r.URL
				u.RawQuery = q
				r = r.Clone(r.Context())
				r.URL = &u
			}
			next.ServeHTTP(w, r)
		})
	}
}

// splitLists returns the query with the lists split, and whether any was.
// A query that does not parse is left to wellFormedURLs, which refused it.
//
//go:noinline
func splitLists(raw string, names map[string]bool) (string, bool) {
	if !strings.Contains(raw, ",") && !strings.Contains(raw, "%2C") && !strings.Contains(raw, "%2c") {
		return raw, false
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return raw, false
	}
	split := false
	for name := range names {
		var out []string
		for _, v := range q[name] {
			parts := strings.Split(v, ",")
			split = split || len(parts) > 1
			out = append(out, parts...)
		}
		if len(out) > 0 {
			q[name] = out
		}
	}
	if !split {
		return raw, false
	}
	return q.Encode(), true
}
