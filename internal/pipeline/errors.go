package pipeline

import (
	"errors"
	"strings"
)

// The errors of every kind's manager. Callers test them with errors.Is;
// the HTTP layer maps each to one status code, in one place.
var (
	// ErrNotFound: the object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request contradicts the stored state (a stale
	// resource version, another spec under the same id).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request is malformed in a way only the manager can
	// tell.
	ErrInvalid = errors.New("invalid")
	// ErrTooLarge: the object would be too big to store.
	ErrTooLarge = errors.New("too large")
)

// FieldError is a refused field of a request, named by its path in the
// request body as JSON names it.
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

// ErrUnsupported: the request is well formed, but asks for something this
// server does not do (a promotion step that needs a PromotionTask).
var ErrUnsupported = errors.New("unsupported")
