package handlers

import (
	"fmt"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"

	"taskactions/internal/auth"
)

// authenticate is the API's authentication: an operation the document
// declares public (`security: []`) passes; any other needs a credential,
// and the subject goes into the request's context for authorize. It runs
// after routing, before validation, so that without credentials nothing
// but 401 is learnt.
func authenticate(a auth.Authenticator, v *validator) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, _, op := v.operation(r); op != nil && public(op) {
				next.ServeHTTP(w, r)
				return
			}
			requireSubject(a, next).ServeHTTP(w, r)
		})
	}
}

// requireSubject serves next only for an authenticated request (401
// otherwise); /metrics uses it too.
func requireSubject(a auth.Authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := a.Authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="taskactions"`)
			writeProblem(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithSubject(r.Context(), s)))
	})
}

// notForTasks refuses task tokens: /metrics is for operators, not for
// what a task needs.
func notForTasks(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := auth.SubjectFrom(r.Context()); s != nil && s.Task != nil {
			writeProblem(w, r, fmt.Errorf("%w: %s may not read the metrics", auth.ErrForbidden, s.Name))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// public reports whether the operation declares no security requirement.
func public(op *openapi3.Operation) bool {
	return op.Security != nil && len(*op.Security) == 0
}
