package handlers

import (
	"maps"
	"slices"
	"testing"

	"taskactions/api"
)

// TestStartingHoldsEveryStream: while the server starts, every stream of
// the document is held (not answered 503), so an EventSource opened then
// connects once the server is ready instead of giving up; the quick read
// of the document the starting server makes finds what the full load does.
func TestStartingHoldsEveryStream(t *testing.T) {
	v, err := newValidator(api.OpenAPI, BasePath)
	if err != nil {
		t.Fatal(err)
	}
	var streams []string
	held := streamRoutes()
	for path, item := range v.doc.Paths.Map() {
		if item.Get != nil && slices.Contains(item.Get.Tags, "streams") {
			streams = append(streams, path)
			if op := held[path]; op != "" && op != item.Get.OperationID {
				t.Errorf("%s is held as %s, but the document names it %s", path, op, item.Get.OperationID)
			}
		}
	}
	slices.Sort(streams)
	if got := slices.Sorted(maps.Keys(held)); !slices.Equal(streams, got) || len(streams) < 9 {
		t.Errorf("streams in the document %q, held while starting %q", streams, got)
	}
}
