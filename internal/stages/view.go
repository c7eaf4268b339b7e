package stages

import (
	kargo "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/journal"
)

// Update is a Stage as clients see it (the Kubernetes object, with its
// apiVersion and kind) at one resource version. One value is shared by every
// list, snapshot and subscriber: treat it as read-only.
type Update struct {
	Stage   *kargo.Stage
	Deleted bool
	// JSON memoizes the encoding of the object, Wire that of the stream
	// event, so each is done once.
	JSON journal.Encoded
	Wire journal.Encoded
}

// viewOf is the view of a cached Stage. Typed clients drop apiVersion and
// kind on decoding; clients of this API get them back, as kubectl shows
// them.
func viewOf(s *kargo.Stage, deleted bool) *Update {
	c := *s
	c.APIVersion, c.Kind = kargo.GroupVersion.String(), "Stage"
	c.ManagedFields = nil // a write's answer has them; the cache drops them
	return &Update{Stage: &c, Deleted: deleted}
}

type journalEntry = journal.Entry[*Update]
