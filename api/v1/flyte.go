package v1

import "encoding/json"

// EnqueuedByFlyte reports whether Flyte's Actions service enqueued the
// action rather than this server: a condition action (this server makes
// none), or a task whose template is not JSON (Flyte stores a serialized
// protobuf; this server always JSON). Such actions are Flyte's to run and
// to keep: this server shows and records them, but writes no bookkeeping
// of its own on them and leaves their end of life to Flyte's garbage
// collector.
func EnqueuedByFlyte(ta *TaskAction) bool {
	s := &ta.Spec
	return s.ActionType == ActionTypeCondition || (len(s.TaskTemplate) > 0 && !json.Valid(s.TaskTemplate))
}
