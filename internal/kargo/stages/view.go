package stages

import (
	kargoapi "taskactions/api/kargo/v1alpha1"
	"taskactions/internal/journal"
	"taskactions/internal/pipeline"
)

// Update is a Stage as clients see it, at one resource version.
type Update = pipeline.ObjectView[*kargoapi.Stage]

var viewOf = pipeline.ObjectViews[kargoapi.Stage](kargoapi.GroupVersion.WithKind("Stage"))

type journalEntry = journal.Entry[*Update]
