package taskactions

import (
	"errors"
	"fmt"

	"taskactions/internal/history"
	"taskactions/internal/pipeline"
)

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
	// ErrRetired: the action finished and left the control plane for
	// history, so it takes no more changes (the API answers 409). It is
	// also ErrNotFound, for callers that only ask whether its object is
	// there (an executor forgetting it, an abort of what is gone).
	ErrRetired = fmt.Errorf("it finished and was retired to history: %w", ErrNotFound)
	// ErrHistory: the history store, which the request needed, did not
	// answer, or not in time (the API answers 503). Every failure of the
	// store is one.
	ErrHistory = history.ErrUnavailable
)

// FieldError is a field of a request the manager refuses, named by its
// path in the request (as JSON names it: runSpec, labels, <key>).
type FieldError = pipeline.FieldError

// FieldErrors is every refused field of one request. It is an ErrInvalid.
type FieldErrors = pipeline.FieldErrors

// ErrNoChange, returned by a mutate function, ends UpdateStatus without a
// write.
var ErrNoChange = errors.New("no change")
