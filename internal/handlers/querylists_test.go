package handlers

import (
	"maps"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"taskactions/api"
)

// The document's list parameters: listRuns' phase, and nothing whose
// values may hold a comma (continue, a page token).
func TestCommaListParams(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(commaListParams(doc))); !slices.Equal(got, []string{"phase"}) {
		t.Errorf("comma lists: %v, want [phase]", got)
	}
}

func TestSplitLists(t *testing.T) {
	lists := map[string]bool{"phase": true}
	for _, tc := range []struct{ raw, want string }{
		{"phase=FAILED,TIMED_OUT", "phase=FAILED&phase=TIMED_OUT"},
		{"phase=FAILED%2CTIMED_OUT&limit=5", "limit=5&phase=FAILED&phase=TIMED_OUT"},
		{"phase=FAILED&phase=TIMED_OUT,ABORTED", "phase=FAILED&phase=TIMED_OUT&phase=ABORTED"},
		{"phase=FAILED&phase=TIMED_OUT", "phase=FAILED&phase=TIMED_OUT"}, // as it was
		{"continue=a,b&phase=FAILED", "continue=a,b&phase=FAILED"},       // not a list
		{"phase=FAILED,", "phase=FAILED&phase="},                         // the validator says what is wrong
		{"", ""},
	} {
		got, _ := splitLists(tc.raw, lists)
		if got != tc.want {
			t.Errorf("splitLists(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}
