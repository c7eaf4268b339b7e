package stages

import (
	kargo "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/journal"
	"taskactions/internal/pipeline"
)

// Update is a Stage as clients see it, at one resource version.
type Update = pipeline.ObjectView[*kargo.Stage]

var viewOf = pipeline.ObjectViews[kargo.Stage](kargo.GroupVersion.WithKind("Stage"))

type journalEntry = journal.Entry[*Update]
