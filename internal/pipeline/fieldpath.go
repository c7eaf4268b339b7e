package pipeline

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FieldPath splits a Kubernetes field path (spec.steps[1].as, or
// metadata.labels[kargo.akuity.io/shard]) into the segments of a JSON
// pointer: spec, steps, 1, as.
func FieldPath(p string) []string {
	if p == "<nil>" { // field.Path's String of no path
		return nil
	}
	var segs []string
	for p != "" {
		switch {
		case p[0] == '.':
			p = p[1:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(segs, p[1:])
			}
			segs = append(segs, p[1:end])
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			segs = append(segs, p[:end])
			p = p[end:]
		}
	}
	return segs
}

// FromFieldErrors turns Kubernetes field errors into FieldErrors (nil
// when there are none).
func FromFieldErrors(list field.ErrorList) error {
	if len(list) == 0 {
		return nil
	}
	errs := make(FieldErrors, len(list))
	for i, e := range list {
		errs[i] = FieldError{Path: FieldPath(e.Field), Detail: e.ErrorBody()}
	}
	return errs
}

// FromAPIError maps an API server error about an object of a kind in a
// project to the pipeline's errors: 404, 409 (a stale resource version,
// or a name taken), and 422 (what a CRD's schema, CEL rules or admission
// refuse) as field errors.
func FromAPIError(kind, project, name string, err error) error {
	var status apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(err):
		return Errorf(ErrNotFound, "%s %q not found in project %q", kind, name, project)
	case apierrors.IsAlreadyExists(err):
		return Errorf(ErrConflict, "%s %q already exists in project %q", kind, name, project)
	case apierrors.IsConflict(err):
		return Errorf(ErrConflict, "%s %q has changed since the resourceVersion this change was made from; read it again", kind, name)
	case apierrors.IsInvalid(err) && errors.As(err, &status) && status.Status().Details != nil:
		var errs FieldErrors
		for _, c := range status.Status().Details.Causes {
			errs = append(errs, FieldError{Path: FieldPath(c.Field), Detail: c.Message})
		}
		if len(errs) > 0 {
			return errs
		}
	}
	return fmt.Errorf("%s %q in project %q: %w", kind, name, project, err)
}
