package handlers

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"taskactions/internal/auth"
	"taskactions/internal/history"
	"taskactions/internal/kargo/stages"
	"taskactions/internal/pipeline"
	"taskactions/internal/taskactions"
)

// Errors of the HTTP layer itself. Like the manager's, they become a status
// code in problemFor and nowhere else.
var (
	errUnsupportedMediaType = errors.New("the request body must be application/json (or application/yaml, where an operation accepts it)")
	errNotReady             = errors.New("the server is starting: its cache is not synced yet")
	errRouteNotFound        = errors.New("no such route")
	errMethodNotAllowed     = errors.New("method not allowed on this route")
	errTooManyStreams       = errors.New("too many open streams; try again later")
	errBodyTimeout          = errors.New("the request body did not arrive in time")
)

// invalidRequest is a request the OpenAPI document rejects, with each
// offending field.
type invalidRequest struct {
	detail string
	params []InvalidParam
}

func (e *invalidRequest) Error() string { return e.detail }

// badRequest wraps an error the request caused (a body that is not JSON,
// a malformed parameter).
type badRequest struct{ err error }

func (e badRequest) Error() string { return e.err.Error() }
func (e badRequest) Unwrap() error { return e.err }

// problemFor maps an error to its status and problem document. This is
// the one place where errors meet status codes. A 500 says nothing of the
// cause; the log has it, under the request id.
func problemFor(err error) Problem {
	var invalid *invalidRequest
	var tooLarge *http.MaxBytesError
	var yamlLarge *yamlTooLarge
	var bad badRequest
	var fields taskactions.FieldErrors
	switch {
	case errors.As(err, &fields):
		p := problem(http.StatusBadRequest, "the request has fields this server does not accept")
		params := make([]InvalidParam, len(fields))
		for i, f := range fields {
			pointer := jsonPointer(f.Path)
			params[i] = InvalidParam{Pointer: &pointer, Detail: f.Detail}
		}
		p.Errors = &params
		return p
	case errors.As(err, &invalid):
		p := problem(http.StatusBadRequest, invalid.detail)
		if len(invalid.params) > 0 {
			p.Errors = &invalid.params
		}
		return p
	case errors.As(err, &tooLarge):
		return problem(http.StatusRequestEntityTooLarge, "the request body is larger than 1 MiB")
	case errors.As(err, &yamlLarge):
		return problem(http.StatusRequestEntityTooLarge, yamlLarge.Error())
	case errors.As(err, &bad), errors.Is(err, taskactions.ErrInvalid), errors.Is(err, errPathNotCanonical), errors.Is(err, history.ErrBadToken):
		return problem(http.StatusBadRequest, err.Error())
	case errors.Is(err, taskactions.ErrRetired): // before ErrNotFound, which it also is
		return problem(http.StatusConflict, err.Error())
	case outOfSpace(err):
		return problem(http.StatusInsufficientStorage, "the store is full, so nothing can be written: finished actions leave the control plane as their retention ends (--retention), and writes resume once there is room; or raise --etcd-quota")
	case errors.Is(err, taskactions.ErrHistory): // the cause (a database address, perhaps) is for the log
		return problem(http.StatusServiceUnavailable, taskactions.ErrHistory.Error()+" in time, or is behind; try again")
	case errors.Is(err, taskactions.ErrNotFound), errors.Is(err, errRouteNotFound):
		return problem(http.StatusNotFound, err.Error())
	case errors.Is(err, errMethodNotAllowed):
		return problem(http.StatusMethodNotAllowed, err.Error())
	case errors.Is(err, taskactions.ErrConflict):
		return problem(http.StatusConflict, err.Error())
	case errors.Is(err, taskactions.ErrTooLarge):
		return problem(http.StatusRequestEntityTooLarge, err.Error())
	case errors.Is(err, auth.ErrThrottled):
		return problem(http.StatusTooManyRequests, err.Error())
	case errors.Is(err, auth.ErrUnauthenticated):
		return problem(http.StatusUnauthorized, err.Error())
	case errors.Is(err, auth.ErrForbidden), errors.Is(err, errHostNotAllowed), errors.Is(err, errCrossOrigin):
		return problem(http.StatusForbidden, err.Error())
	case errors.Is(err, errBodyTimeout):
		return problem(http.StatusRequestTimeout, err.Error())
	case errors.Is(err, errUnsupportedMediaType):
		return problem(http.StatusUnsupportedMediaType, err.Error())
	case errors.Is(err, pipeline.ErrUnsupported):
		return problem(http.StatusUnprocessableEntity, err.Error())
	case errors.Is(err, stages.ErrRefreshNotHandled):
		return problem(http.StatusGatewayTimeout, err.Error())
	case errors.Is(err, errNotReady), errors.Is(err, errTooManyStreams), errors.Is(err, auth.ErrUnavailable):
		return problem(http.StatusServiceUnavailable, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return problem(http.StatusServiceUnavailable, "the request was cancelled or timed out")
	}
	return problem(http.StatusInternalServerError, "internal error; the server log has the details under this request's id")
}

// outOfSpace: etcd refused a write for its quota (the API server passes its
// error on as an internal error), or the history store's disk is full.
func outOfSpace(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "database space exceeded") || strings.Contains(msg, "database or disk is full") ||
		strings.Contains(msg, "No space left on device") || strings.Contains(msg, "no space left on device")
}

// retryAfter is when to come back after a 503 the store caused: it is
// busy or behind, and says so rather than hang (its reads give up after
// history.ReadTimeout).
func retryAfter(err error) string {
	if errors.Is(err, taskactions.ErrHistory) && !outOfSpace(err) {
		return "5"
	}
	return ""
}

// expectedUnavailable: a 503 the server gives by design (starting, or at
// its stream limit), not a fault to log as an error; the access log has it.
func expectedUnavailable(err error) bool {
	return errors.Is(err, errTooManyStreams) || errors.Is(err, errNotReady)
}

func problem(status int, detail string) Problem {
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status}
	if detail != "" {
		p.Detail = &detail
	}
	return p
}

// writeProblem writes err as application/problem+json, logging the ones
// that are the server's fault.
func writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	writeProblemCtx(r.Context(), w, err)
}

// writeProblemCtx is writeProblem where only the request's context is at
// hand (a stream's response).
func writeProblemCtx(ctx context.Context, w http.ResponseWriter, err error) {
	p := problemFor(err)
	if p.Status >= 500 && !expectedUnavailable(err) {
		zerolog.Ctx(ctx).Error().Err(err).Msg("request failed")
	}
	if id := requestID(ctx); id != "" {
		instance := "urn:request:" + id
		p.Instance = &instance
	}
	var throttled *auth.Throttled
	if errors.As(err, &throttled) {
		w.Header().Set("Retry-After", strconv.Itoa(int(max(throttled.RetryAfter.Round(time.Second), time.Second)/time.Second)))
	}
	if s := retryAfter(err); s != "" && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", s)
	}
	respondProblem(ctx, w, p)
}
