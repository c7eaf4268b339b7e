package taskactions

import (
	"errors"
	"strings"
)

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

// ErrTooLarge: the action would be too big to store and to record its
// status in (see MaxObjectBytes).
var ErrTooLarge = errors.New("too large")

// FieldError is a field of a request the manager refuses, named by its
// path in the request (as JSON names it: runSpec, labels, <key>).
type FieldError struct {
	Path   []string
	Detail string
}

// FieldErrors is every refused field of one request. It is an ErrInvalid.
type FieldErrors []FieldError

func (e FieldErrors) Error() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = strings.Join(f.Path, ".") + ": " + f.Detail
	}
	return strings.Join(parts, "; ")
}

// Unwrap makes FieldErrors an ErrInvalid.
func (e FieldErrors) Unwrap() error { return ErrInvalid }
