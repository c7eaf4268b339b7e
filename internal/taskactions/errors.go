package taskactions

import "taskactions/internal/pipeline"

// The manager's errors are the pipeline's, shared by every kind. Callers
// test them with errors.Is; the HTTP layer maps each to one status code,
// in one place.
var (
	// ErrNotFound: the action (or the parent of a new child) does not exist.
	ErrNotFound = pipeline.ErrNotFound
	// ErrConflict: the request contradicts the stored state (another spec
	// under the same id, a stale attempt, leaving a terminal phase).
	ErrConflict = pipeline.ErrConflict
	// ErrInvalid: the request is malformed in a way only the manager can
	// tell (the schema has already been checked by the caller).
	ErrInvalid = pipeline.ErrInvalid
	// ErrTooLarge: the action would be too big to store and to record its
	// status in (see MaxObjectBytes).
	ErrTooLarge = pipeline.ErrTooLarge
)

// FieldError is a field of a request the manager refuses, named by its
// path in the request (as JSON names it: runSpec, labels, <key>).
type FieldError = pipeline.FieldError

// FieldErrors is every refused field of one request. It is an ErrInvalid.
type FieldErrors = pipeline.FieldErrors
