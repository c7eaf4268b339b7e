package taskactions

import "errors"

// The manager's errors. Callers test them with errors.Is; the HTTP layer
// maps each to one status code, in one place.
var (
	// ErrNotFound: the action (or the parent of a new child) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request contradicts the stored state (another spec
	// under the same id, a stale attempt, leaving a terminal phase).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request is malformed in a way only the manager can
	// tell (the schema has already been checked by the caller).
	ErrInvalid = errors.New("invalid")
)
