package handlers

import (
	"maps"
	"slices"
	"testing"

	"taskactions/api"
)

// TestStartingHoldsEveryStream: while the server starts, every stream of
// the document is held (not answered 503), so an EventSource opened then
// connects once the server is ready instead of giving up.
func TestStartingHoldsEveryStream(t *testing.T) {
	v, err := newValidator(api.OpenAPI, BasePath)
	if err != nil {
		t.Fatal(err)
	}
	var streams []string
	for path, item := range v.doc.Paths.Map() {
		if item.Get != nil && slices.Contains(item.Get.Tags, "streams") {
			streams = append(streams, path)
			if op := streamPatterns[path]; op != "" && op != item.Get.OperationID {
				t.Errorf("%s is held as %s, but the document names it %s", path, op, item.Get.OperationID)
			}
		}
	}
	slices.Sort(streams)
	held := slices.Sorted(maps.Keys(streamPatterns))
	if !slices.Equal(streams, held) {
		t.Errorf("streams in the document %q, held while starting %q", streams, held)
	}
}
