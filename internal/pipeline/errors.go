package pipeline

import (
	"errors"
	"fmt"
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

// Errorf is an error of a kind (ErrNotFound, ErrInvalid, ...) whose
// message is the formatted text alone, without the kind's name after it:
// what people read in a problem's detail. %w in format wraps as in
// fmt.Errorf.
func Errorf(kind error, format string, args ...any) error {
	return &kindError{err: fmt.Errorf(format, args...), kind: kind}
}

type kindError struct{ err, kind error }

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }
